// One test per hostile input reported against the surfaces: each failed before the change
// that made the edges total, and each asserts what a user sees (a status, a settlement).
import { createServer } from "node:http";
import { cloudEvent, http } from "@google-cloud/functions-framework";
import { getTestServer } from "@google-cloud/functions-framework/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { InvalidKey, ThrownValue } from "../../src/core/errors.js";
import { errorText, resetLoggerComplaint } from "../../src/core/logger.js";
import type { Logger } from "../../src/core/types.js";
import { lock } from "../../src/core/verbs/lock.js";
import { idempotent, idempotentHttp, idempotentMessage } from "../../src/surfaces/index.js";
import { fakeMessage, pushBody, structuredCloudEvent } from "../../src/testing/index.js";
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
      const failures = logger.at("ERROR").map((line) => String(line.fields.reason));
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
