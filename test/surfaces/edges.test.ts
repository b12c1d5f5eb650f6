// One test per hostile input reported against the surfaces: each failed before the change
// that made the edges total, and each asserts what a user sees (a status, a settlement).
import { Buffer } from "node:buffer";
import { createServer } from "node:http";
import { cloudEvent, http } from "@google-cloud/functions-framework";
import { getTestServer } from "@google-cloud/functions-framework/testing";
import express from "express";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { InvalidConfiguration, InvalidKey, ThrownValue } from "../../src/core/errors.js";
import { errorText, resetLoggerComplaint } from "../../src/core/logger.js";
import type { Logger } from "../../src/core/types.js";
import { lock } from "../../src/core/verbs.js";
import { parsePushBody } from "../../src/surfaces/envelope.js";
import { idempotent, idempotentHttp, idempotentMessage } from "../../src/surfaces/index.js";
import { fakeMessage, pushBody, structuredCloudEvent } from "../../src/testing/push-simulator.js";
import { hostileThrows } from "../support/hostile-throws.js";
import { captureLogger, listen, post } from "./helpers.js";

const closers: (() => Promise<void>)[] = [];
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => {
  process.on("unhandledRejection", onUnhandled);
});
afterAll(() => {
  process.off("unhandledRejection", onUnhandled);
});
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
  // Give a stray rejection a turn to surface before checking.
  await new Promise((done) => setImmediate(done));
  expect(unhandled.splice(0)).toEqual([]);
});

let registered = 0;
async function serveHttp(fn: (req: never, res: never) => unknown): Promise<string> {
  const name = `edge${++registered}`;
  http(name, fn as Parameters<typeof http>[1]);
  const s = await listen(getTestServer(name));
  closers.push(s.close);
  return s.url;
}
async function serveCloudEvent(fn: Parameters<typeof cloudEvent>[1]): Promise<string> {
  const name = `edgece${++registered}`;
  cloudEvent(name, fn);
  const s = await listen(getTestServer(name));
  closers.push(s.close);
  return s.url;
}
async function serveNodeHttp(fn: (req: never, res: never) => unknown): Promise<string> {
  const s = await listen(createServer((req, res) => void fn(req as never, res as never)));
  closers.push(s.close);
  return s.url;
}

describe("a handler that throws something that is not a usable Error is nacked", () => {
  for (const [name, value] of hostileThrows()) {
    it(`${name}: 500 on functions-framework cloudEvent, never 204`, async () => {
      const logger = captureLogger();
      let runs = 0;
      const url = await serveCloudEvent(
        idempotent({ backend: new InMemoryLock(), logger }, () => {
          runs++;
          throw value();
        }),
      );
      const event = structuredCloudEvent("x", { messageId: `ce-${name}` });
      const first = await post(url, event, { "content-type": "application/cloudevents+json" });
      expect(first.status).toBe(500);
      // Released, not completed: the redelivery runs the handler again.
      const again = await post(url, event, { "content-type": "application/cloudevents+json" });
      expect(again.status).toBe(500);
      expect(runs).toBe(2);
    });

    it(`${name}: 500 on functions-framework http and on node:http`, async () => {
      const logger = captureLogger();
      const fn = idempotentHttp({ backend: new InMemoryLock(), logger }, () => {
        throw value();
      });
      for (const url of [await serveHttp(fn), await serveNodeHttp(fn)]) {
        expect((await post(url, pushBody("x"))).status).toBe(500);
      }
      const failures = logger.at("ERROR").map((line) => String(line.fields.error));
      expect(failures).toHaveLength(2);
      for (const text of failures) expect(text.length).toBeGreaterThan(0);
    });

    it(`${name}: nack on the pull surface, and one log line that renders it`, async () => {
      const logger = captureLogger();
      const message = fakeMessage("x");
      await idempotentMessage({ backend: new InMemoryLock(), logger }, () => {
        throw value();
      })(message);
      expect(message.settlements).toEqual(["nack"]);
      expect(logger.at("ERROR")).toHaveLength(1);
    });

    it(`${name}: thrown by a key function, nacked before any claim`, async () => {
      const backend = new InMemoryLock();
      let runs = 0;
      const url = await serveCloudEvent(
        idempotent(
          {
            backend,
            logger: captureLogger(),
            key: () => {
              throw value();
            },
          },
          () => {
            runs++;
          },
        ),
      );
      const event = structuredCloudEvent("x");
      expect(
        (await post(url, event, { "content-type": "application/cloudevents+json" })).status,
      ).toBe(500);
      expect(runs).toBe(0);
    });
  }

  it("wraps the value as ThrownValue, keeping the original as cause", async () => {
    const original = Object.create(null);
    const rejection = await idempotent(
      { backend: new InMemoryLock(), logger: captureLogger() },
      () => {
        throw original;
      },
    )(structuredCloudEvent("x")).catch((error: unknown) => error);
    expect(rejection).toBeInstanceOf(ThrownValue);
    expect((rejection as ThrownValue).cause).toBe(original);
    expect((rejection as ThrownValue).message).toBe(
      "the handler threw a non-Error value: an object",
    );
  });

  it("errorText renders every hostile value without throwing", () => {
    for (const [, value] of hostileThrows()) {
      expect(typeof errorText(value())).toBe("string");
    }
  });
});

describe("a logger that throws changes nothing", () => {
  const throwing: Logger = {
    info() {
      throw new Error("info");
    },
    warn() {
      throw new Error("warn");
    },
    error() {
      throw new Error("error");
    },
  };
  // A logger typed to return nothing that returns a rejected promise all the same.
  const reject = (what: string) =>
    (() => Promise.reject(new Error(what))) as unknown as () => undefined;
  const rejecting: Logger = { info: reject("info"), warn: reject("warn"), error: reject("error") };

  for (const [name, logger] of [
    ["throwing", throwing],
    ["rejecting", rejecting],
  ] as const) {
    it(`${name}: duplicate 204, contention 503, failure 500, unkeyed 400`, async () => {
      resetLoggerComplaint();
      const backend = new InMemoryLock();
      let release = () => {};
      const held = new Promise<void>((done) => {
        release = done;
      });
      const url = await serveNodeHttp(
        idempotentHttp({ backend, logger }, async (message) => {
          if (message.text() === "fail") throw new Error("boom");
          if (message.text() === "hold") await held;
        }),
      );
      const body = pushBody("ok");
      expect((await post(url, body)).status).toBe(204);
      expect((await post(url, body)).status).toBe(204);
      const holding = post(url, pushBody("hold", { messageId: "h" }));
      await new Promise((done) => setTimeout(done, 20));
      expect((await post(url, pushBody("hold", { messageId: "h" }))).status).toBe(503);
      release();
      expect((await holding).status).toBe(204);
      expect((await post(url, pushBody("fail"))).status).toBe(500);
      expect((await post(url, { message: { messageId: "", data: "" } })).status).toBe(400);
    });
  }

  it("pull: a duplicate is still acked when logger.info throws", async () => {
    const backend = new InMemoryLock();
    const listener = idempotentMessage({ backend, logger: throwing }, () => {});
    await listener(fakeMessage("x", { messageId: "p-1" }));
    const redelivery = fakeMessage("x", { messageId: "p-1" });
    await listener(redelivery);
    expect(redelivery.settlements).toEqual(["ack"]);
  });

  it("lock(): a throwing logger does not turn an acked fenced-out complete into a rejection", async () => {
    const backend = new InMemoryLock();
    backend.complete = async () => false;
    await expect(lock("k", { backend, logger: throwing }, () => 7)).resolves.toBe(7);
  });

  it("an onDuplicate hook that rejects is logged and the duplicate still acked", async () => {
    const logger = captureLogger();
    const listener = idempotentMessage(
      { backend: new InMemoryLock(), logger, onDuplicate: async () => Promise.reject(0) },
      () => {},
    );
    await listener(fakeMessage("x", { messageId: "d" }));
    const redelivery = fakeMessage("x", { messageId: "d" });
    await listener(redelivery);
    await new Promise((done) => setImmediate(done));
    expect(redelivery.settlements).toEqual(["ack"]);
    expect(logger.at("ERROR").map((line) => line.fields.outcome)).toEqual(["hook_failed"]);
  });
});

describe("large and odd bodies", () => {
  it("a 10 MB message (13.4 MB as base64 JSON) is handled with the default body limit", async () => {
    const data = Buffer.alloc(10_000_000, 7);
    let seen = 0;
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, (m) => {
      seen = m.data.byteLength;
    });
    const url = await serveNodeHttp(fn);
    const body = JSON.stringify({
      message: { messageId: "big", data: data.toString("base64") },
      subscription: "projects/p/subscriptions/s",
    });
    expect(body.length).toBeGreaterThan(13_000_000);
    expect((await post(url, body)).status).toBe(204);
    expect(seen).toBe(10_000_000);
  });

  it("base64 of 4 MB and more is checked without overflowing the stack", () => {
    const data = Buffer.alloc(6_000_000, 1).toString("base64");
    expect(parsePushBody({ message: { messageId: "1", data } }).data.byteLength).toBe(6_000_000);
    expect(() => parsePushBody({ message: { messageId: "1", data: `${data}!` } })).toThrow(
      /not valid base64/,
    );
  });

  it("a messageId over the key limit is a 400 with a reason, and the handler never runs", async () => {
    let runs = 0;
    const url = await serveNodeHttp(
      idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, () => {
        runs++;
      }),
    );
    const tooLong = await post(url, pushBody("x", { messageId: "9".repeat(1025) }));
    expect(tooLong.status).toBe(400);
    expect(tooLong.text).toMatch(/at most 1024 UTF-8 bytes/);
    const loneSurrogate = await post(url, '{"message":{"messageId":"k\\ud800","data":""}}');
    expect(loneSurrogate.status).toBe(400);
    expect(loneSurrogate.text).toMatch(/lone surrogate/);
    expect(runs).toBe(0);
  });

  it("attributes named __proto__ and constructor are kept as data", async () => {
    const raw =
      '{"message":{"messageId":"a","data":"","attributes":{"__proto__":"x","constructor":"y","toString":"z"}}}';
    const message = parsePushBody(raw);
    expect(Object.keys(message.attributes).sort()).toEqual([
      "__proto__",
      "constructor",
      "toString",
    ]);
    const PROTO = "__proto__";
    expect(message.attributes[PROTO]).toBe("x");
    expect(message.attributes.constructor).toBe("y");
    expect(Object.getPrototypeOf(message.attributes)).toBe(Object.prototype);
    const pulled = fakeMessage("x", { attributes: JSON.parse('{"__proto__":"p"}') });
    let seen: Record<string, string> = {};
    await idempotentMessage({ backend: new InMemoryLock(), logger: captureLogger() }, (m) => {
      seen = { ...m.attributes };
    })(pulled);
    expect(Object.keys(seen)).toEqual(["__proto__"]);
  });

  it("the README's Express mounting (no global parser) takes a 1 MB message", async () => {
    const app = express();
    app.post(
      "/push",
      idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, () => {}),
    );
    const s = await listen(createServer(app));
    closers.push(s.close);
    const big = pushBody(Buffer.alloc(1_000_000, 2));
    expect((await post(`${s.url}push`, big)).status).toBe(204);
  });
});

describe("keys that no store can hold as written are refused before any I/O", () => {
  for (const key of ["k\uD800", "k\uDC00", "\uDBFF", "a\u0000b", "x".repeat(1025)]) {
    it(`${JSON.stringify(key).slice(0, 20)} → InvalidKey, the body never runs`, async () => {
      const backend = new InMemoryLock();
      const claims: string[] = [];
      const claim = backend.claim.bind(backend);
      backend.claim = (k, lease) => {
        claims.push(k);
        return claim(k, lease);
      };
      let runs = 0;
      await expect(
        lock(key, { backend }, () => {
          runs++;
        }),
      ).rejects.toBeInstanceOf(InvalidKey);
      expect(runs).toBe(0);
      expect(claims).toEqual([]);
    });
  }

  it("well-formed neighbours stay distinct keys: k, k\uFFFD, a surrogate pair", async () => {
    const backend = new InMemoryLock();
    const ran: string[] = [];
    for (const key of ["k", "k\uFFFD", "k\uD83D\uDE00", "k\uD83D\uDE01"]) {
      await lock(key, { backend }, () => {
        ran.push(key);
      });
    }
    expect(ran).toHaveLength(4);
  });
});

describe("options are checked when the function is built", () => {
  const backend = new InMemoryLock();
  const noRenew = { claim: backend.claim, complete: backend.complete, release: backend.release };
  const bad: [string, Record<string, unknown>, RegExp][] = [
    ["leaseMs -1", { leaseMs: -1 }, /leaseMs/],
    ["leaseMs NaN", { leaseMs: Number.NaN }, /leaseMs/],
    ["leaseMs MAX_SAFE_INTEGER", { leaseMs: Number.MAX_SAFE_INTEGER }, /leaseMs/],
    ["waitMs -5", { waitMs: -5 }, /waitMs/],
    ["waitMs '10'", { waitMs: "10" }, /waitMs/],
    ["heartbeat without renew", { backend: noRenew, heartbeat: true }, /renew/],
    ['allowUnguarded "false"', { allowUnguarded: "false" }, /allowUnguarded/],
    ['heartbeat "false"', { heartbeat: "false" }, /heartbeat/],
    ["heartbeat 0", { heartbeat: 0 }, /heartbeat/],
    ["heartbeat null", { heartbeat: null }, /heartbeat/],
    ["heartbeat.everyMs Infinity", { heartbeat: { everyMs: Infinity } }, /everyMs/],
    ["logger {}", { logger: {} }, /logger/],
    ["logger with a string info", { logger: { info: "x", warn() {}, error() {} } }, /logger/],
    ["key 'messageId'", { key: "messageId" }, /key/],
    ["onDuplicate true", { onDuplicate: true }, /onDuplicate/],
    ["backend.renew not a function", { backend: { ...noRenew, renew: 1 } }, /renew/],
    ["maxBodyBytes 0", { maxBodyBytes: 0 }, /maxBodyBytes/],
    ["maxBodyBytes 1.5", { maxBodyBytes: 1.5 }, /maxBodyBytes/],
  ];
  for (const [name, extra, names] of bad) {
    it(`${name}: InvalidConfiguration naming it, from every surface`, () => {
      const options = { backend, ...extra } as never;
      const surfaces = [
        () => idempotentHttp(options, () => {}),
        ...(name.startsWith("maxBodyBytes")
          ? []
          : [() => idempotent(options, () => {}), () => idempotentMessage(options, () => {})]),
      ];
      for (const build of surfaces) {
        let error: unknown;
        try {
          build();
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(InvalidConfiguration);
        expect((error as Error).message).toMatch(names);
      }
    });
  }

  it("an options object whose getters throw is a configuration error, not a TypeError", () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error("trap");
        },
      },
    );
    expect(() => idempotentHttp(hostile as never, () => {})).toThrow(InvalidConfiguration);
    expect(() => idempotentMessage(hostile as never, () => {})).toThrow(/could not be read/);
  });
});
