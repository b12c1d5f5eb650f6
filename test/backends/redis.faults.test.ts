import { createClient } from "@redis/client";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { BackendError, Duplicate, lock } from "../../src/index.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { silentLogger } from "../support/logger.js";
import { type RedisServer, startRedisServer } from "../support/redis.js";

// Fault tests run on a redis-server of their own: the shared one is never disturbed.
let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("RedisLock when the connection is lost mid-run", () => {
  it("ioredis: calls in flight reject, later ones succeed, a surviving DONE key stays done", async () => {
    const client = new Redis(server.port, "127.0.0.1", {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      // Slow enough that a call made between the drop and the reconnect meets no connection,
      // even on a busy machine that takes a few hundred ms to get there.
      retryStrategy: () => 1_000,
    });
    const admin = new Redis(server.port, "127.0.0.1");
    await until(() => client.status === "ready", "ioredis to connect");
    try {
      const backend = new RedisLock({ client, prefix: "faults-io:" });
      const options = { backend, leaseMs: 5_000, logger: silentLogger };
      let bodies = 0;
      await lock("order-1", options, () => {
        bodies++;
      });

      // Kill every client socket but the admin's while a lock() is in flight.
      // Settled at once: it may reject while the kill below is still awaited.
      const inFlight = lock("order-2", options, () => {
        bodies++;
      }).catch((error: unknown) => {
        expect(error).toBeInstanceOf(BackendError);
      });
      await admin.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
      // order-2 may have landed before the kill: either way it settles and never hangs.
      await inFlight;
      await until(() => client.status !== "ready", "ioredis to notice the drop");
      const afterKill = lock("order-3", options, () => {
        bodies++;
      });
      await expect(afterKill).rejects.toBeInstanceOf(BackendError);
      await expect(afterKill).rejects.toThrow(/redis claim failed for key "order-3"/);

      await until(() => client.status === "ready", "ioredis to reconnect");
      await expect(
        lock("order-1", options, () => {
          bodies++;
        }),
      ).rejects.toBeInstanceOf(Duplicate);
      const before = bodies;
      await lock("order-4", options, () => {
        bodies++;
      });
      expect(bodies).toBe(before + 1);
    } finally {
      client.disconnect();
      admin.disconnect();
    }
  });

  it("node-redis: a killed socket rejects the call, the reconnected client carries on", async () => {
    const client = createClient({
      url: server.url,
      disableOfflineQueue: true,
      socket: { reconnectStrategy: () => 300 },
    });
    let dropped = false;
    client.on("error", () => {
      dropped = true; // the socket closed under it: expected here, it reconnects
    });
    const admin = new Redis(server.port, "127.0.0.1");
    await client.connect();
    try {
      const backend = new RedisLock({ client, prefix: "faults-nr:" });
      const options = { backend, leaseMs: 5_000, logger: silentLogger };
      await lock("order-1", options, () => {});
      await admin.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
      // node-redis reconnects at once, so a call just after the kill may ride the new socket;
      // when it does fail, it fails loudly as a BackendError and its body never runs.
      const body = vi.fn();
      const outcome = await lock("order-2", options, body).then(
        () => "ran",
        (error: unknown) => error,
      );
      if (outcome === "ran") expect(body).toHaveBeenCalledTimes(1);
      else {
        expect(outcome).toBeInstanceOf(BackendError);
        expect(body).not.toHaveBeenCalled();
      }
      await until(() => dropped, "node-redis to report the drop");
      await until(() => client.isReady, "node-redis to reconnect");
      await expect(lock("order-1", options, () => {})).rejects.toBeInstanceOf(Duplicate);
      await expect(lock("order-5", options, () => "ran")).resolves.toBe("ran");
    } finally {
      await client.close?.().catch(() => {});
      admin.disconnect();
    }
  });
});

describe("RedisLock when a claim's reply is lost", () => {
  it("ioredis resends the claim after reconnecting: it wins by its token, not held by itself", async () => {
    const proxy = await startFaultProxy({ host: "127.0.0.1", port: server.port });
    // ioredis's defaults: a command left unanswered by a dropped connection is sent again.
    const client = new Redis(proxy.port, "127.0.0.1", { retryStrategy: () => 10 });
    client.on("error", () => {}); // the reset, expected; ioredis reconnects
    try {
      const backend = new RedisLock({ client, prefix: "lost-reply:" });
      await until(() => client.status === "ready", "ioredis to connect");
      // The script cached first: the cut must fall on the claim's reply, not on a NOSCRIPT.
      await backend.claim("warm-up", 60_000);
      const cut = proxy.resetMidReply();
      const outcome = await backend.claim("order-1", 60_000);
      await cut;
      expect(proxy.stats().resets).toBe(1);
      // The first run of the script won; its resend finds its own token and says so.
      expect(outcome.status).toBe("won");
      const stored = await client.hget("lost-reply:order-1", "fencingId");
      if (outcome.status === "won") expect(outcome.claim.fencingId).toBe(Number(stored));
      // Another claim (another token) is held by it, as before.
      await expect(backend.claim("order-1", 60_000)).resolves.toMatchObject({ status: "held" });
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });
});

describe("RedisLock across a server crash and restart", () => {
  const crashRun = async (appendonly: boolean) => {
    const crashing = await startRedisServer({ appendonly });
    const client = new Redis(crashing.port, "127.0.0.1", {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => 50,
    });
    try {
      await until(() => client.status === "ready", "ioredis to connect");
      const backend = new RedisLock({ client, prefix: "crash:" });
      const options = { backend, leaseMs: 60_000, logger: silentLogger };
      let bodies = 0;
      await lock("done-before-crash", options, () => {
        bodies++;
      });
      const held = await backend.claim("held-before-crash", 60_000);
      await crashing.crashAndRestart();
      await until(() => client.status === "ready", "ioredis to reconnect");
      const redelivery = await lock("done-before-crash", options, () => {
        bodies++;
      }).then(
        () => "ran again",
        (error: unknown) => (error instanceof Duplicate ? "duplicate" : String(error)),
      );
      return {
        bodies,
        held,
        heldAfter: await backend.claim("held-before-crash", 60_000),
        redelivery,
      };
    } finally {
      client.disconnect();
      await crashing.stop();
    }
  };

  it("with appendonly (fsync always) done records, held claims and fences survive a SIGKILL", async () => {
    const run = await crashRun(true);
    expect(run.redelivery).toBe("duplicate");
    expect(run.bodies).toBe(1);
    expect(run.held.status).toBe("won");
    expect(run.heldAfter).toMatchObject({ status: "held" });
  });

  it("without persistence a restart forgets: the redelivery runs the body again (why AOF)", async () => {
    const run = await crashRun(false);
    expect(run.redelivery).toBe("ran again");
    expect(run.bodies).toBe(2);
    // The forgotten claim is won again, but its new fence comes from the server's clock:
    // above the old holder's, which stays fenced out.
    expect(run.heldAfter.status).toBe("won");
    const before = run.held.status === "won" ? run.held.claim.fencingId : Number.POSITIVE_INFINITY;
    const after = run.heldAfter.status === "won" ? run.heldAfter.claim.fencingId : 0;
    expect(after).toBeGreaterThan(before);
  });
});
