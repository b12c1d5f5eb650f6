import { createServer, request } from "node:http";
import { http } from "@google-cloud/functions-framework";
import { getTestServer } from "@google-cloud/functions-framework/testing";
import express from "express";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { InProgress, InvalidConfiguration } from "../../src/core/errors.js";
import {
  type HttpRequestLike,
  type HttpResponseLike,
  idempotent,
  idempotentHttp,
  idempotentMessage,
} from "../../src/surfaces/index.js";
import { fakeMessage, pushBody, structuredCloudEvent } from "../../src/testing/index.js";
import { captureLogger, gate, listen, post } from "./helpers.js";

const ENV = ["CLOUD_RUN_TIMEOUT_SECONDS", "FUNCTION_TIMEOUT_SEC"] as const;
const closers: (() => Promise<void>)[] = [];
const unhandled: unknown[] = [];
process.on("unhandledRejection", (reason) => unhandled.push(reason));
beforeEach(() => {
  for (const name of ENV) delete process.env[name];
});
afterEach(async () => {
  for (const name of ENV) delete process.env[name];
  await Promise.all(closers.splice(0).map((c) => c()));
  expect(unhandled).toEqual([]);
});

type Serve = (req: HttpRequestLike, res: HttpResponseLike) => Promise<void>;

/** Mount a gateway; `served` resolves each time the gateway finished with one request. */
let registered = 0;
const mounts: Record<string, (fn: Serve, served: () => void) => Promise<string>> = {
  "node:http": async (fn, served) => {
    const s = await listen(createServer((req, res) => void fn(req, res).then(served)));
    closers.push(s.close);
    return s.url;
  },
  "express json": async (fn, served) => {
    const app = express();
    app.use(express.json());
    app.post("/push", (req, res) => void fn(req, res).then(served));
    const s = await listen(createServer(app));
    closers.push(s.close);
    return `${s.url}push`;
  },
  "functions-framework http": async (fn, served) => {
    const name = `deadline${++registered}`;
    http(name, (req, res) => void fn(req, res).then(served));
    const s = await listen(getTestServer(name));
    closers.push(s.close);
    return s.url;
  },
};

/** POST `body`, then destroy the socket once `started` resolves: a client that gives up. */
async function abandon(url: string, body: unknown, started: Promise<void>): Promise<void> {
  const req = request(url, { method: "POST", headers: { "content-type": "application/json" } });
  req.on("error", () => {}); // the reset we cause ourselves
  req.end(JSON.stringify(body));
  await started;
  req.destroy();
}

/** Rejects with the signal's reason once it aborts. */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

describe.each(Object.keys(mounts))("a client that goes away, on %s", (mountName) => {
  const mount = mounts[mountName] as (typeof mounts)[string];

  it.each([
    ["without heartbeat", {}],
    ["with heartbeat", { heartbeat: true }],
  ])(
    "aborts the handler's signal %s, logs it once, and the claim is released",
    async (_, extra) => {
      const logger = captureLogger();
      const started = gate();
      let served = gate();
      const reasons: unknown[] = [];
      let calls = 0;
      const fn = idempotentHttp(
        { backend: new InMemoryLock(), logger, ...extra },
        async (_message, _req, _res, signal) => {
          calls += 1;
          if (calls > 1) return; // the redelivery
          started.open();
          try {
            await untilAborted(signal);
          } catch (reason) {
            reasons.push(reason);
            throw reason;
          }
        },
      );
      const url = await mount(fn, () => served.open());
      const body = pushBody("order", {
        messageId: `gone-${mountName}-${Object.keys(extra).length}`,
      });

      await abandon(url, body, started.promise);
      await served.promise;
      expect(reasons).toHaveLength(1);
      expect(String((reasons[0] as Error).message)).toMatch(/^the client went away after \d+ ms$/);
      const gone = logger.lines.filter((line) => line.fields.outcome === "client_gone");
      expect(gone).toHaveLength(1);
      expect(gone[0]?.severity).toBe("WARNING");
      expect(gone[0]?.message).toMatch(/client went away after \d+ ms.*may be redelivered/);
      expect(gone[0]?.fields.messageId).toBe(body.message.messageId);

      // The handler rejected on the abort: the claim was released, so the redelivery runs.
      served = gate();
      expect((await post(url, body)).status).toBe(204);
      expect(calls).toBe(2);
    },
  );

  it("a handler that ignores the signal and finishes completes the key: the redelivery is a duplicate", async () => {
    const logger = captureLogger();
    const started = gate();
    const finish = gate();
    let served = gate();
    let calls = 0;
    let abortedWhenDone: boolean | undefined;
    const fn = idempotentHttp(
      { backend: new InMemoryLock(), logger },
      async (_message, _req, _res, signal) => {
        calls += 1;
        started.open();
        await finish.promise;
        abortedWhenDone = signal.aborted;
      },
    );
    const url = await mount(fn, () => served.open());
    const body = pushBody("order", { messageId: `ignored-${mountName}` });

    await abandon(url, body, started.promise);
    await expect
      .poll(() => logger.lines.some((l) => l.fields.outcome === "client_gone"))
      .toBe(true);
    finish.open();
    await served.promise;
    expect(abortedWhenDone).toBe(true);

    served = gate();
    expect((await post(url, body)).status).toBe(204);
    expect(calls).toBe(1);
  });
});

describe("a client that goes away", () => {
  it("while still sending the body: logged once, the handler never runs", async () => {
    const logger = captureLogger();
    const arrived = gate();
    const served = gate();
    let calls = 0;
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger }, () => {
      calls += 1;
    });
    const server = await listen(
      createServer((req, res) => {
        arrived.open();
        void fn(req, res).then(served.open);
      }),
    );
    closers.push(server.close);
    const req = request(server.url, {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": "1000" },
    });
    req.on("error", () => {});
    req.write('{"message":');
    await arrived.promise;
    req.destroy();
    await served.promise;
    expect(calls).toBe(0);
    expect(logger.lines.filter((line) => line.fields.outcome === "client_gone")).toHaveLength(1);
  });

  it("answered normally, no warning is logged and the signal never aborts", async () => {
    const logger = captureLogger();
    let signalSeen: AbortSignal | undefined;
    const served = gate();
    const fn = idempotentHttp(
      { backend: new InMemoryLock(), logger },
      (_message, _req, _res, signal) => {
        signalSeen = signal;
      },
    );
    const url = await mounts["node:http"]?.(fn, () => served.open());
    expect((await post(url as string, pushBody("x"))).status).toBe(204);
    await served.promise;
    expect(signalSeen?.aborted).toBe(false);
    expect(logger.at("WARNING")).toEqual([]);
  });
});

describe("a heartbeat that loses the lease aborts the signal of every surface", () => {
  it("pull: the handler's signal aborts, the message is nacked", async () => {
    let now = 1_000_000;
    const backend = new InMemoryLock({ now: () => now });
    const logger = captureLogger();
    const started = gate();
    const onMessage = idempotentMessage(
      { backend, logger, leaseMs: 60_000, heartbeat: { everyMs: 10 } },
      async (_message, signal) => {
        started.open();
        await untilAborted(signal);
      },
    );
    const message = fakeMessage("x", { messageId: "hb-pull" });
    const settled = onMessage(message);
    await started.promise;
    now += 120_000; // the lease lapses and another holder reclaims the key
    expect((await backend.claim("hb-pull", 60_000)).status).toBe("won");
    await settled;
    expect(message.settlements).toEqual(["nack"]);
    expect(logger.at("ERROR").map((l) => l.fields.outcome)).toContain("fenced_out");
  });

  it("idempotentHttp on a real socket: the handler's signal aborts, 500", async () => {
    let now = 1_000_000;
    const backend = new InMemoryLock({ now: () => now });
    const started = gate();
    let reason: unknown;
    const fn = idempotentHttp(
      { backend, logger: captureLogger(), leaseMs: 60_000, heartbeat: { everyMs: 10 } },
      async (_message, _req, _res, signal) => {
        started.open();
        await untilAborted(signal).catch((error: unknown) => {
          reason = error;
          throw error;
        });
      },
    );
    const url = await mounts["node:http"]?.(fn, () => {});
    const answer = post(url as string, pushBody("x", { messageId: "hb-http" }));
    await started.promise;
    now += 120_000;
    expect((await backend.claim("hb-http", 60_000)).status).toBe("won");
    expect((await answer).status).toBe(500);
    expect(String(reason)).toMatch(/taken over/);
  });

  it("cloudEvent: the handler's signal aborts, the function rejects", async () => {
    let now = 1_000_000;
    const backend = new InMemoryLock({ now: () => now });
    const started = gate();
    const fn = idempotent(
      { backend, logger: captureLogger(), leaseMs: 60_000, heartbeat: { everyMs: 10 } },
      async (_event, signal) => {
        started.open();
        await untilAborted(signal);
      },
    );
    const settled = fn(structuredCloudEvent("x", { messageId: "hb-ce" }));
    await started.promise;
    now += 120_000;
    expect((await backend.claim("hb-ce", 60_000)).status).toBe("won");
    await expect(settled).rejects.toThrow(/taken over/);
  });
});

/** An in-process request/response pair, enough for idempotentHttp. */
function exchange(body: unknown) {
  const res = {
    statusCode: 200,
    writableEnded: false,
    end(_chunk?: string) {
      this.writableEnded = true;
    },
  };
  return { req: { body }, res };
}

const leaseWarnings = (logger: ReturnType<typeof captureLogger>) =>
  logger.lines.filter((line) => line.fields.outcome === "lease_shorter_than_request_timeout");

describe("a lease shorter than the request timeout", () => {
  const backend = new InMemoryLock();

  it.each([
    ["idempotentHttp", (options: object) => idempotentHttp({ backend, ...options }, () => {})],
    ["idempotent", (options: object) => idempotent({ backend, ...options }, () => {})],
  ] as const)("%s warns once, when built, naming sizing rule 1 (option)", async (name, build) => {
    const logger = captureLogger();
    const fn = build({ logger, leaseMs: 1_000, requestTimeoutMs: 5_000 });
    const lines = leaseWarnings(logger);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.severity).toBe("WARNING");
    expect(lines[0]?.message).toContain(`${name}(): leaseMs (1000 ms) is shorter than`);
    expect(lines[0]?.message).toContain("5000 ms, from options.requestTimeoutMs");
    expect(lines[0]?.message).toContain('sizing rule 1, "the lease outlasts the work"');
    expect(lines[0]?.fields).toMatchObject({
      sizingRule: 1,
      leaseMs: 1_000,
      requestTimeoutMs: 5_000,
    });

    // Deliveries never repeat it.
    for (let i = 0; i < 3; i++) {
      if (name === "idempotentHttp") {
        const { req, res } = exchange(pushBody("x"));
        await (fn as ReturnType<typeof idempotentHttp>)(req, res);
      } else {
        await (fn as ReturnType<typeof idempotent>)(structuredCloudEvent("x"));
      }
    }
    expect(leaseWarnings(logger)).toHaveLength(1);
  });

  it.each([
    ["CLOUD_RUN_TIMEOUT_SECONDS", "3600", 3_600_000],
    ["FUNCTION_TIMEOUT_SEC", "540", 540_000],
  ])("warns from %s=%s with the default lease where it is shorter", (variable, value, ms) => {
    process.env[variable] = value;
    const logger = captureLogger();
    idempotentHttp({ backend, logger, leaseMs: 300_000 }, () => {});
    idempotent({ backend, logger, leaseMs: 300_000 }, () => {});
    const lines = leaseWarnings(logger);
    expect(lines.map((line) => line.message.slice(0, line.message.indexOf(":")))).toEqual([
      "idempotentHttp()",
      "idempotent()",
    ]);
    for (const line of lines)
      expect(line.fields).toMatchObject({ source: variable, requestTimeoutMs: ms });
  });

  it("prefers CLOUD_RUN_TIMEOUT_SECONDS, and the option over both", () => {
    process.env.CLOUD_RUN_TIMEOUT_SECONDS = "600";
    process.env.FUNCTION_TIMEOUT_SEC = "60";
    const logger = captureLogger();
    idempotentHttp({ backend, logger, leaseMs: 120_000 }, () => {});
    expect(leaseWarnings(logger)[0]?.fields.source).toBe("CLOUD_RUN_TIMEOUT_SECONDS");
    const quiet = captureLogger();
    idempotentHttp(
      { backend, logger: quiet, leaseMs: 120_000, requestTimeoutMs: 60_000 },
      () => {},
    );
    expect(quiet.lines).toEqual([]);
  });

  it("stays quiet when the lease, or the heartbeat's hold, covers the timeout", () => {
    process.env.CLOUD_RUN_TIMEOUT_SECONDS = "300";
    const logger = captureLogger();
    idempotentHttp({ backend, logger }, () => {}); // 15-minute default lease
    idempotentHttp({ backend, logger, leaseMs: 300_000 }, () => {});
    idempotentHttp({ backend, logger, leaseMs: 30_000, heartbeat: true }, () => {});
    expect(logger.lines).toEqual([]);
  });

  it("names heartbeat.maxHoldMs when the heartbeat stops renewing before the timeout", () => {
    process.env.CLOUD_RUN_TIMEOUT_SECONDS = "3600";
    const logger = captureLogger();
    const heartbeat = { maxHoldMs: 600_000 };
    idempotentHttp({ backend, logger, leaseMs: 30_000, heartbeat }, () => {});
    const lines = leaseWarnings(logger);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.message).toContain("heartbeat.maxHoldMs (600000 ms) and leaseMs (30000 ms)");
    expect(lines[0]?.message).toContain("raise heartbeat.maxHoldMs");
  });

  it("is no concern of the pull surface, which has no request", () => {
    process.env.CLOUD_RUN_TIMEOUT_SECONDS = "3600";
    const logger = captureLogger();
    idempotentMessage({ backend, logger, leaseMs: 1_000 }, () => {});
    expect(logger.lines).toEqual([]);
  });
});

describe("hostile request timeouts", () => {
  const backend = new InMemoryLock();

  it.each([
    "abc",
    "-5",
    "1.5",
    "1e3",
    "0x10",
    "Infinity",
    "NaN",
    "60s",
    "99999999999",
    "3".repeat(400),
  ])("%j in the environment is ignored with one warning, never a crash", (value) => {
    for (const variable of ENV) {
      process.env[variable] = value;
      const logger = captureLogger();
      expect(() => idempotentHttp({ backend, logger, leaseMs: 1_000 }, () => {})).not.toThrow();
      const ignored = logger.lines.filter((line) => line.fields.outcome === "config_ignored");
      expect(ignored.filter((line) => line.fields.variable === variable)).toHaveLength(1);
      expect(ignored[0]?.message).toMatch(
        /^idempotentHttp\(\): ignoring \w+=".*": not a whole number of seconds/,
      );
      expect(ignored[0]?.message.length).toBeLessThan(300);
      expect(leaseWarnings(logger)).toEqual([]); // the timeout stays unknown
      delete process.env[variable];
    }
  });

  it.each(["", " ", "0"])("%j reads as no timeout, silently", (value) => {
    process.env.CLOUD_RUN_TIMEOUT_SECONDS = value;
    const logger = captureLogger();
    idempotentHttp({ backend, logger, leaseMs: 1_000 }, () => {});
    expect(logger.lines).toEqual([]);
  });

  it("a bad CLOUD_RUN_TIMEOUT_SECONDS falls through to a good FUNCTION_TIMEOUT_SEC", () => {
    process.env.CLOUD_RUN_TIMEOUT_SECONDS = "-1";
    process.env.FUNCTION_TIMEOUT_SEC = " 60 ";
    const logger = captureLogger();
    idempotentHttp({ backend, logger, leaseMs: 1_000 }, () => {});
    expect(logger.lines.map((line) => line.fields.outcome)).toEqual([
      "config_ignored",
      "lease_shorter_than_request_timeout",
    ]);
    expect(leaseWarnings(logger)[0]?.fields).toMatchObject({
      source: "FUNCTION_TIMEOUT_SEC",
      requestTimeoutMs: 60_000,
    });
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, "300", null, {}])(
    "requestTimeoutMs: %j is refused when the function is built, naming it",
    (value) => {
      for (const build of [
        () => idempotentHttp({ backend, requestTimeoutMs: value as number }, () => {}),
        () => idempotent({ backend, requestTimeoutMs: value as number }, () => {}),
      ]) {
        expect(build).toThrow(InvalidConfiguration);
        expect(build).toThrow(/options\.requestTimeoutMs must be a positive whole number/);
      }
    },
  );
});

describe("waitMs never runs past the deadline", () => {
  /** A backend on which `key` is held by another delivery for a minute. */
  async function heldBy(key: string): Promise<InMemoryLock> {
    const backend = new InMemoryLock();
    await backend.claim(key, 60_000);
    return backend;
  }
  const options = { logger: captureLogger(), waitMs: 5_000, requestTimeoutMs: 100 };

  it.each([
    [
      "idempotentHttp answers 503",
      async (backend: InMemoryLock, key: string) => {
        const url = await mounts["node:http"]?.(
          idempotentHttp({ backend, ...options }, () => {}),
          () => {},
        );
        expect((await post(url as string, pushBody("x", { messageId: key }))).status).toBe(503);
      },
    ],
    [
      "idempotent rejects InProgress",
      async (backend: InMemoryLock, key: string) => {
        const fn = idempotent({ backend, ...options }, () => {});
        await expect(fn(structuredCloudEvent("x", { messageId: key }))).rejects.toThrow(InProgress);
      },
    ],
  ])("%s to a held key inside the request timeout, not after waitMs", async (name, deliver) => {
    const key = `held-${name.split(" ")[0]}`;
    const backend = await heldBy(key);
    const startedAt = Date.now();
    await deliver(backend, key);
    expect(Date.now() - startedAt).toBeLessThan(2_000);
  });

  it("counts from the request's start: a slow upload leaves less of the wait", async () => {
    const backend = await heldBy("held-slow");
    // The upload takes 700 ms of a 1,000 ms deadline. Counted from the request's start the
    // wait ends at 900 ms (the tenth is kept for the answer): 200 ms after the body arrived.
    // Counted from the delivery it would end 900 ms after. The bound sits between the two,
    // 350 ms from each, so a loaded machine's scheduling delay cannot flip the verdict.
    const requestTimeoutMs = 1_000;
    const uploadMs = 700;
    const fn = idempotentHttp(
      { backend, logger: captureLogger(), waitMs: 5_000, requestTimeoutMs },
      () => {},
    );
    const url = await mounts["node:http"]?.(fn, () => {});
    const body = JSON.stringify(pushBody("x", { messageId: "held-slow" }));
    const startedAt = Date.now();
    let uploadedAt = 0;
    const status = await new Promise<number>((done, fail) => {
      const req = request(url as string, {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": String(body.length) },
      });
      req.on("response", (res) => {
        res.resume();
        done(res.statusCode ?? 0);
      });
      req.on("error", fail);
      req.flushHeaders();
      setTimeout(() => {
        uploadedAt = Date.now();
        req.end(body);
      }, uploadMs);
    });
    const answeredAt = Date.now();
    expect(status).toBe(503);
    expect(answeredAt - startedAt).toBeGreaterThanOrEqual(0.85 * requestTimeoutMs);
    expect(answeredAt - uploadedAt).toBeLessThan(550);
  });

  it("a wait that fits the deadline is left alone: the redelivery waits out a short holder", async () => {
    const backend = new InMemoryLock();
    const first = await backend.claim("short-holder", 60_000);
    if (first.status !== "won") throw new Error("setup");
    const fn = idempotentHttp(
      { backend, logger: captureLogger(), waitMs: 1_000, requestTimeoutMs: 60_000 },
      () => {},
    );
    const { req, res } = exchange(pushBody("x", { messageId: "short-holder" }));
    setTimeout(() => void backend.release(first.claim), 30);
    await fn(req, res);
    expect(res.statusCode).toBe(204);
  });
});
