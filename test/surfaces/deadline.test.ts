import { createServer, request } from "node:http";
import { http } from "@google-cloud/functions-framework";
import { getTestServer } from "@google-cloud/functions-framework/testing";
import express from "express";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import {
  type HttpRequestLike,
  type HttpResponseLike,
  idempotent,
  idempotentHttp,
  idempotentMessage,
} from "../../src/surfaces/index.js";
import { fakeMessage, pushBody, structuredCloudEvent } from "../../src/testing/push-simulator.js";
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
