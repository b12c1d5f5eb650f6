// The adversarial suite: random and hostile requests against every way the gateway is
// mounted, and hostile pull messages, with the invariants a user relies on checked on each:
// never a 2xx for a message nobody processed, the handler never runs for refused input, the
// body runs once per distinct key, every pull message is settled, and nothing escapes as an
// unhandled rejection or an uncaught exception. A fixed seed runs every time; a random seed
// runs for a few seconds more and prints its seed when it finds something.
import { Buffer } from "node:buffer";
import { createServer } from "node:http";
import { cloudEvent, http } from "@google-cloud/functions-framework";
import { getTestServer } from "@google-cloud/functions-framework/testing";
import express from "express";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { InvalidConfiguration } from "../../src/core/errors.js";
import type { Logger } from "../../src/core/types.js";
import { idempotent, idempotentHttp, idempotentMessage } from "../../src/surfaces/index.js";
import { hostileThrows } from "../support/hostile-throws.js";
import { listen } from "./helpers.js";

const SEED = 20261203;
const RANDOM_MS = 4_000;

const silent: Logger = { info() {}, warn() {}, error() {} };
const escaped: unknown[] = [];
const onEscape = (reason: unknown) => escaped.push(reason);
const throws = hostileThrows();

/** What the handler does, chosen by the request: run, or throw one of the hostile values. */
type Action = { kind: "ok" } | { kind: "throw"; index: number };

/** Everything the handlers saw, by messageId, shared by all mounts. */
const successes = new Map<string, number>();
const attributesSeen = new Map<string, string[]>();
let runsForRefused = 0;

function act(messageId: string, attributes: Readonly<Record<string, string>>): void {
  if (messageId.startsWith("refused:")) runsForRefused++;
  const action = attributes.action ?? "ok";
  attributesSeen.set(messageId, Object.keys(attributes).sort());
  if (action.startsWith("throw:")) {
    const entry = throws[Number(action.slice(6)) % throws.length];
    if (entry) throw entry[1]();
  }
  successes.set(messageId, (successes.get(messageId) ?? 0) + 1);
}

interface Mount {
  name: string;
  url: string;
  /** How the request body is sent: a push body, or a structured CloudEvent around it. */
  cloudEvent: boolean;
}
const mounts: Mount[] = [];
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  process.on("unhandledRejection", onEscape);
  process.on("uncaughtException", onEscape);
  // One backend per mount: the same message may be sent to several mounts.
  const pushHandler = () =>
    idempotentHttp({ backend: new InMemoryLock(), logger: silent }, (message) =>
      act(message.messageId, message.attributes),
    );
  const serve = async (name: string, server: ReturnType<typeof createServer>, path = "") => {
    const s = await listen(server);
    closers.push(s.close);
    mounts.push({ name, url: `${s.url}${path}`, cloudEvent: false });
  };
  const nodeHandler = pushHandler();
  await serve(
    "node:http",
    createServer((req, res) => void nodeHandler(req, res)),
  );
  const withParser = express();
  withParser.use(express.json({ limit: "20mb" }));
  withParser.post("/push", pushHandler());
  await serve("express json", createServer(withParser), "push");
  const bare = express();
  bare.post("/push", pushHandler());
  await serve("express without parser", createServer(bare), "push");
  http("adversarialHttp", pushHandler());
  await serve("functions-framework http", getTestServer("adversarialHttp"));
  cloudEvent(
    "adversarialCe",
    idempotent({ backend: new InMemoryLock(), logger: silent }, (event) => {
      const message = (event.data as { message: { messageId: string; attributes?: never } })
        .message;
      act(message.messageId, message.attributes ?? {});
    }),
  );
  const ce = await listen(getTestServer("adversarialCe"));
  closers.push(ce.close);
  mounts.push({ name: "functions-framework cloudEvent", url: ce.url, cloudEvent: true });
});

afterAll(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  process.off("unhandledRejection", onEscape);
  process.off("uncaughtException", onEscape);
});

/** An independent statement of the key rule, to predict which ids must be refused. */
function usableKey(id: string): boolean {
  return (
    id !== "" && !/\p{Cs}/u.test(id) && !id.includes("\u0000") && Buffer.byteLength(id) <= 1024
  );
}

let sequence = 0;
const hostileText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.constantFrom(
    "\u200f\u202e",
    "e\u0301",
    "\u00e9",
    "'; DROP TABLE x; --",
    "{tag}",
    "%s\\`",
    "\u0000",
    "\uD800",
    "x".repeat(1100),
  ),
);
const attributeName = fc.oneof(
  fc.string({ maxLength: 8 }).filter((s) => s !== "action"),
  fc.constantFrom("__proto__", "constructor", "toString", "hasOwnProperty", "__defineGetter__"),
);
const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Action>({ kind: "ok" }) },
  fc.nat({ max: throws.length - 1 }).map<Action>((index) => ({ kind: "throw", index })),
);

/** A well-formed push (whose key may still be unusable), and how many copies race. */
const validPush = fc.record({
  id: hostileText,
  action,
  attributes: fc.dictionary(attributeName, fc.string({ maxLength: 8 }), { maxKeys: 4 }),
  data: fc.uint8Array({ maxLength: 64 }),
  copies: fc.integer({ min: 1, max: 3 }),
  contentType: fc.constantFrom("application/json", "text/plain", "application/octet-stream"),
});

/** Bodies that are not a push: none of them may be acked or reach the handler. */
const junk = fc.oneof(
  fc.json().map((text) => ({ text, contentType: "application/json" })),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => ({
    text: Buffer.from(bytes).toString("latin1"),
    contentType: "application/octet-stream",
  })),
  fc
    .constantFrom(
      "",
      "null",
      "[]",
      '{"message":null}',
      '{"message":{"data":"aGk="}}',
      '{"message":{"messageId":5,"data":""}}',
      '{"message":{"messageId":"refused:1","data":"!!!"}}',
      '{"message":{"messageId":"refused:2","attributes":{"a":1}}}',
      '{"message":{"messageId":"refused:3","attributes":[]}}',
      '{"message":{"messageId":"refused:4"},"deliveryAttempt":-1}',
      '{"message":{"messageId":"refused:5","publishTime":"yesterday"}}',
      '{"message":{"messageId":"refused:6","message_id":"refused:7"}}',
      '{"message":{"messageId":"","data":""}}',
      '{"__proto__":{"message":{"messageId":"refused:8"}}}',
    )
    .map((text) => ({ text, contentType: "application/json" })),
);

async function send(
  mount: Mount,
  text: string,
  contentType: string,
): Promise<{ status: number; text: string }> {
  const response = await fetch(mount.url, {
    method: "POST",
    headers: { "content-type": mount.cloudEvent ? "application/cloudevents+json" : contentType },
    body: text,
  });
  return { status: response.status, text: await response.text() };
}

function wrap(mount: Mount, pushJson: string): string {
  if (!mount.cloudEvent) return pushJson;
  return `{"specversion":"1.0","id":"ce-${sequence}","type":"google.cloud.pubsub.topic.v1.messagePublished","source":"//pubsub.googleapis.com/projects/p/topics/t","datacontenttype":"application/json","data":${pushJson}}`;
}

function runs(numRuns: number, seed: number | undefined, timeMs?: number): fc.Parameters<unknown> {
  return {
    numRuns,
    ...(seed === undefined ? {} : { seed }),
    ...(timeMs === undefined
      ? {}
      : { interruptAfterTimeLimit: timeMs, markInterruptAsFailure: false }),
  };
}

const pushProperty = (mount: () => Mount) =>
  fc.asyncProperty(validPush, async (p) => {
    const m = mount();
    const id = `${++sequence}:${p.id}`;
    const attributes: Record<string, string> = {};
    for (const [name, value] of Object.entries(p.attributes)) {
      Object.defineProperty(attributes, name, { value, enumerable: true });
    }
    attributes.action = p.action.kind === "ok" ? "ok" : `throw:${p.action.index}`;
    const body = wrap(
      m,
      JSON.stringify({
        message: { messageId: id, data: Buffer.from(p.data).toString("base64"), attributes },
        subscription: "projects/p/subscriptions/s",
      }),
    );
    const answers = await Promise.all(
      Array.from({ length: p.copies }, () => send(m, body, p.contentType)),
    );
    const settle = await send(m, body, p.contentType);
    const statuses = [...answers, settle].map((a) => a.status);
    if (!usableKey(id)) {
      // Refused before the handler, with a 4xx where the surface can choose its status.
      expect(successes.has(id) || attributesSeen.has(id)).toBe(false);
      for (const status of statuses) expect(status).toBeGreaterThanOrEqual(400);
      if (!m.cloudEvent) for (const status of statuses) expect(status).toBe(400);
      return;
    }
    if (p.action.kind === "throw") {
      for (const status of statuses) expect(status).toBeGreaterThanOrEqual(500);
      expect(successes.has(id)).toBe(false);
      return;
    }
    // Ran once; the racing copies answered 2xx (ran or duplicate) or a nack for contention.
    expect(successes.get(id)).toBe(1);
    expect(settle.status).toBe(204);
    for (const status of statuses) expect([204, 500, 503]).toContain(status);
    if (!m.cloudEvent) for (const status of statuses) expect([204, 503]).toContain(status);
    // Nothing dropped or swapped among the attributes, __proto__ included.
    expect(attributesSeen.get(id)).toEqual(Object.keys(attributes).sort());
  });

const junkProperty = (mount: () => Mount) =>
  fc.asyncProperty(junk, async (j) => {
    const m = mount();
    const { status } = await send(m, wrap(m, j.text || "null"), j.contentType);
    if (m.cloudEvent) {
      // The CloudEvent surface keys on the messageId alone and leaves the rest to the
      // handler, so a readable id may run it: a 2xx then means the handler succeeded.
      const id = /"messageId":"([^"]*)"/.exec(j.text)?.[1];
      if (status < 400) expect(id !== undefined && successes.has(id)).toBe(true);
      return;
    }
    // (No count of all successes here: a time-bounded run may leave a push of the previous
    // property still in flight, and its success would land during this one.)
    expect(status).toBeGreaterThanOrEqual(400);
    expect(runsForRefused).toBe(0);
  });

describe("adversarial pushes on every mount", () => {
  const names = [
    "node:http",
    "express json",
    "express without parser",
    "functions-framework http",
    "functions-framework cloudEvent",
  ];
  for (const name of names) {
    const mount = () => {
      const m = mounts.find((candidate) => candidate.name === name);
      if (!m) throw new Error(`no mount ${name}`);
      return m;
    };
    it(`${name}: pushes, fixed seed`, async () => {
      await fc.assert(pushProperty(mount), runs(60, SEED));
      expect(escaped).toEqual([]);
    });
    it(`${name}: junk bodies, fixed seed`, async () => {
      await fc.assert(junkProperty(mount), runs(60, SEED));
      expect(escaped).toEqual([]);
    });
    it(`${name}: pushes and junk, random seed for ${RANDOM_MS / 1000} s`, async () => {
      await fc.assert(pushProperty(mount), runs(10_000, undefined, RANDOM_MS / 2));
      await fc.assert(junkProperty(mount), runs(10_000, undefined, RANDOM_MS / 2));
      expect(escaped).toEqual([]);
    });
  }
});

/** A pull message whose fields and settle calls may be hostile; counts its settlements. */
const pullCase = fc.record({
  id: fc.oneof(hostileText, fc.constantFrom<unknown>(undefined, 5, null, {})),
  idGetterThrows: fc.boolean(),
  ackThrows: fc.boolean(),
  action,
  asyncHandler: fc.boolean(),
  duplicate: fc.boolean(),
  // ackWithResponse()/nackWithResponse(), as exactly-once clients have them: what they do.
  withResponse: fc.option(
    fc.record({
      how: fc.constantFrom("resolve", "reject", "throw"),
      value: fc.oneof(
        fc.constantFrom<unknown>("SUCCESS", "INVALID", "OTHER", "PERMISSION_DENIED"),
        fc.record({ errorCode: fc.oneof(fc.string(), fc.constantFrom("INVALID", "OTHER")) }),
        fc.anything(),
      ),
    }),
    { nil: undefined },
  ),
});

describe("adversarial pull messages", () => {
  const property = fc.asyncProperty(pullCase, async (c) => {
    const backend = new InMemoryLock();
    let ran = 0;
    const listener = idempotentMessage({ backend, logger: silent }, (message) => {
      ran++;
      if (c.action.kind === "throw") {
        const value = throws[c.action.index]?.[1]();
        if (c.asyncHandler) return Promise.reject(value);
        throw value;
      }
      return c.asyncHandler ? Promise.resolve(message.id) : undefined;
    });
    const make = () => {
      const settlements: string[] = [];
      const message = {
        data: Buffer.from("x"),
        attributes: {},
        ack() {
          settlements.push("ack");
          if (c.ackThrows) throw new Error("ack failed");
        },
        nack() {
          settlements.push("nack");
        },
      } as Record<string, unknown>;
      const answer = c.withResponse;
      if (answer !== undefined) {
        // The listener must settle through these alone, and survive whatever they do.
        for (const verb of ["ack", "nack"]) {
          message[`${verb}WithResponse`] = () => {
            settlements.push(verb);
            if (answer.how === "throw") throw answer.value;
            return answer.how === "reject"
              ? Promise.reject(answer.value)
              : Promise.resolve(answer.value);
          };
        }
      }
      Object.defineProperty(message, "id", {
        get() {
          if (c.idGetterThrows) throw new Error("id getter");
          return c.id;
        },
      });
      return { message: message as never, settlements };
    };
    const first = make();
    await listener(first.message);
    const second = make();
    if (c.duplicate) await listener(second.message);
    const refused = c.idGetterThrows || typeof c.id !== "string" || !usableKey(c.id as string);
    // Every message settled exactly once; an ack only when the handler succeeded or it
    // was the duplicate of one that did.
    expect(first.settlements).toHaveLength(1);
    const succeeded = !refused && c.action.kind === "ok";
    expect(first.settlements[0]).toBe(succeeded ? "ack" : "nack");
    if (c.duplicate) {
      expect(second.settlements).toEqual([succeeded ? "ack" : "nack"]);
      expect(ran).toBe(refused ? 0 : c.action.kind === "ok" ? 1 : 2);
    } else {
      expect(ran).toBe(refused ? 0 : 1);
    }
  });

  it("fixed seed", async () => {
    await fc.assert(property, runs(300, SEED));
    expect(escaped).toEqual([]);
  });
  it(`random seed for ${RANDOM_MS / 1000} s`, async () => {
    await fc.assert(property, runs(100_000, undefined, RANDOM_MS));
    expect(escaped).toEqual([]);
  });
});

/** Independent statements of the option rules the README gives. */
const MAX_MS = 2 ** 31 - 1;
const wholeMs = (v: unknown, min: number) =>
  typeof v === "number" && Number.isSafeInteger(v) && v >= min && v <= MAX_MS;
const optionRules: Record<string, (v: unknown) => boolean> = {
  leaseMs: (v) => v === undefined || wholeMs(v, 1),
  waitMs: (v) => v === undefined || wholeMs(v, 0),
  allowUnguarded: (v) => v === undefined || typeof v === "boolean",
  heartbeat: (v) => {
    if (v === undefined || typeof v === "boolean") return true;
    if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
    if (!Object.keys(v).every((k) => k === "everyMs" || k === "maxHoldMs")) return false;
    const { everyMs, maxHoldMs } = v as Record<string, unknown>;
    return (
      (everyMs === undefined || (wholeMs(everyMs, 1) && (everyMs as number) < 15 * 60_000)) &&
      (maxHoldMs === undefined || wholeMs(maxHoldMs, 1))
    );
  },
  key: (v) => v === undefined || typeof v === "function",
  onDuplicate: (v) => v === undefined || typeof v === "function",
  logger: (v) =>
    v === undefined ||
    (typeof v === "object" &&
      v !== null &&
      ["info", "warn", "error"].every(
        (level) => typeof (v as Record<string, unknown>)[level] === "function",
      )),
  maxBodyBytes: (v) =>
    v === undefined || (typeof v === "number" && Number.isSafeInteger(v) && v > 0),
  exactlyOnce: (v) => v === undefined || typeof v === "boolean",
};
/** The options only one surface takes; the others refuse them as unknown names. */
const ownOptions: Record<string, string> = {
  maxBodyBytes: "idempotentHttp",
  exactlyOnce: "idempotentMessage",
};
const hostileValue = fc.oneof(
  fc.anything(),
  fc.constantFrom<unknown>(
    Number.NaN,
    Number.POSITIVE_INFINITY,
    -1,
    0,
    1.5,
    MAX_MS,
    MAX_MS + 1,
    Number.MAX_SAFE_INTEGER,
    "false",
    "10",
    null,
    true,
    false,
    Symbol("x"),
    () => {},
    { info() {}, warn() {}, error() {} },
    { info: "x", warn() {}, error() {} },
    { everyMs: 1_000 },
    { everyMs: 15 * 60_000 },
    { maxHoldMs: -1 },
    [],
    10n,
  ),
);

describe("hostile options on every surface", () => {
  const surfaces = {
    idempotent: (o: never) => idempotent(o, () => {}),
    idempotentHttp: (o: never) => idempotentHttp(o, () => {}),
    idempotentMessage: (o: never) => idempotentMessage(o, () => {}),
  };
  const property = fc.property(
    fc.constantFrom(...Object.keys(optionRules)),
    hostileValue,
    fc.constantFrom(...(Object.keys(surfaces) as (keyof typeof surfaces)[])),
    (name, value, surface) => {
      const options = { backend: new InMemoryLock(), [name]: value } as never;
      const owner = ownOptions[name];
      const valid =
        owner !== undefined && owner !== surface
          ? false
          : (optionRules[name] as (v: unknown) => boolean)(value);
      let error: unknown;
      try {
        surfaces[surface](options);
      } catch (e) {
        error = e;
      }
      if (valid) {
        expect(error).toBeUndefined();
      } else {
        expect(error).toBeInstanceOf(InvalidConfiguration);
        expect((error as Error).message).toContain(name);
      }
    },
  );
  it("fixed seed", () => {
    fc.assert(property, { numRuns: 2_000, seed: SEED });
  });
  it(`random seed for ${RANDOM_MS / 1000} s`, () => {
    fc.assert(property, {
      numRuns: 1_000_000,
      interruptAfterTimeLimit: RANDOM_MS,
      markInterruptAsFailure: false,
    });
  });
});
