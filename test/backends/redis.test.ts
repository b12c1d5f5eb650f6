// RedisLock beyond the contract (that is redis.contract.test.ts): the stored hash and its
// expiry, integer exactness, the server clock, fencing, script errors and SCRIPT FLUSH, one
// EVALSHA per verb, connection errors, option validation, and keys spread over a Cluster.
import { randomBytes } from "node:crypto";
import { Cluster, Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { RedisLock, type RedisScriptClient } from "../../src/backends/redis/index.js";
import { MAX_LEASE_MS, MAX_TTL_MS } from "../../src/core/constants.js";
import type { Claim } from "../../src/core/port.js";
import { won } from "../support/claims.js";
import { freePort } from "../support/net.js";
import {
  findOrStartRedis,
  type RedisServer,
  redisClientPair,
  startRedisCluster,
  startRedisServer,
} from "../support/redis.js";
import { startOrSkip } from "../support/required.js";

const server = await startOrSkip("Redis", findOrStartRedis);

const prefix = () => `idem-test:${randomBytes(6).toString("hex")}:`;
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
const LEASE_MS = 50;

describe.skipIf(!server)("RedisLock", () => {
  const url = server?.url ?? "redis://127.0.0.1:6379";
  const redis = redisClientPair(url);
  const { io } = redis;
  beforeAll(() => redis.connect());
  afterAll(async () => {
    await redis.close();
    await server?.stop();
  });

  for (const [name, client] of redis.named) {
    describe(`redis (${name}) specifics`, () => {
      it("stores one hash per key with PEXPIREAT at expiresAt", async () => {
        const p = prefix();
        const lock = new RedisLock({ client, ttlMs: 10_000, prefix: p });
        const claim = won(await lock.claim("k", 5_000));
        const record = await io.hgetall(`${p}k`);
        expect(record).toMatchObject({
          state: "claimed",
          fencingId: String(claim.fencingId),
          leaseExpiresAt: String(claim.leaseExpiresAt),
          expiresAt: String(claim.leaseExpiresAt + 10_000),
        });
        expect(record.token).toMatch(/^[0-9a-f-]{36}$/);
        expect(await io.pexpiretime(`${p}k`)).toBe(claim.leaseExpiresAt + 10_000);
        expect(await lock.complete(claim)).toBe(true);
        const done = await io.hgetall(`${p}k`);
        expect(done.state).toBe("done");
        expect(await io.pexpiretime(`${p}k`)).toBe(Number(done.expiresAt));
      });

      it("keeps epoch-ms integers exact at the longest lease and ttl", async () => {
        const p = prefix();
        // The caps keep now + lease + ttl an exact integer in Lua's doubles; a ttl of 5e14
        // (~15,800 years, 15 digits, where Lua's tostring switches to exponent form) is no
        // longer accepted at all.
        expect(() => new RedisLock({ client, ttlMs: 5e14 + 7, prefix: p })).toThrow(
          /ttlMs must be a positive whole number of milliseconds up to 315360000000/,
        );
        const ttlMs = MAX_TTL_MS;
        const lock = new RedisLock({ client, ttlMs, prefix: p });
        const claim = won(await lock.claim("big", MAX_LEASE_MS - 2));
        expect(await io.hget(`${p}big`, "expiresAt")).toBe(String(claim.leaseExpiresAt + ttlMs));
        expect(await lock.renew(claim, MAX_LEASE_MS)).toBe(true);
        const record = await io.hgetall(`${p}big`);
        expect(Number(record.expiresAt) - Number(record.leaseExpiresAt)).toBe(ttlMs);
        expect(record.expiresAt).toMatch(/^\d{13}$/);
        expect(await io.pexpiretime(`${p}big`)).toBe(Number(record.expiresAt));
        await io.del(`${p}big`);
      });

      it("judges leases by the server TIME, not a skewed client clock", async () => {
        const lock = new RedisLock({ client, ttlMs: 10_000, prefix: prefix() });
        const [seconds] = await io.time();
        const serverNow = Number(seconds) * 1000;
        const realNow = Date.now.bind(Date);
        const skew = vi.spyOn(Date, "now");
        try {
          // A client 3 h ahead: a live lease is still held (a client clock would call it lapsed).
          // The lease is long so that it is live however slowly a busy machine gets here.
          skew.mockImplementation(() => realNow() + 3 * 3_600_000);
          const live = won(await lock.claim("skew-ahead", 60_000));
          // The lease end is the server's now + lease, not the skewed client's.
          expect(Math.abs(live.leaseExpiresAt - serverNow - 60_000)).toBeLessThan(2_000);
          expect((await lock.claim("skew-ahead", LEASE_MS)).status).toBe("held");
          // A client 3 h behind: a lapsed lease is reclaimed (a client clock would call it held).
          skew.mockImplementation(() => realNow() - 3 * 3_600_000);
          expect((await lock.claim("skew-ahead", LEASE_MS)).status).toBe("held");
          const lapsing = won(await lock.claim("skew-behind", LEASE_MS));
          await sleep(LEASE_MS + 20);
          const second = won(await lock.claim("skew-behind", LEASE_MS));
          expect(second.fencingId).toBe(lapsing.fencingId + 1);
        } finally {
          skew.mockRestore();
        }
      });

      it("fences out a zombie whose short lease lapsed on the server", async () => {
        const lock = new RedisLock({ client, ttlMs: 10_000, prefix: prefix() });
        const zombie = won(await lock.claim("z", LEASE_MS));
        await sleep(LEASE_MS + 20);
        const current = won(await lock.claim("z", 10_000));
        expect(current.fencingId).toBe(zombie.fencingId + 1);
        expect(await lock.renew(zombie, 10_000)).toBe(false);
        await lock.release(zombie);
        expect(await lock.complete(zombie)).toBe(false);
        expect(await lock.claim("z", 10_000)).toEqual({
          status: "held",
          leaseExpiresAt: current.leaseExpiresAt,
        });
        expect(await lock.complete(current)).toBe(true);
        expect(await lock.claim("z", 10_000)).toEqual({ status: "done" });
      });

      it("a script error (a non-hash at the key) rejects with BackendError", async () => {
        const p = prefix();
        await io.set(`${p}k`, "not a hash", "PX", 10_000);
        const lock = new RedisLock({ client, prefix: p });
        await expect(lock.claim("k", 1_000)).rejects.toMatchObject({
          code: "BACKEND_ERROR",
          backend: "redis",
          verb: "claim",
          key: "k",
          message: expect.stringContaining("WRONGTYPE"),
        });
      });

      it("survives SCRIPT FLUSH: EVALSHA falls back to EVAL", async () => {
        const lock = new RedisLock({ client, ttlMs: 10_000, prefix: prefix() });
        const claim = won(await lock.claim("flush", 10_000));
        // Flushes only the script cache (no data), and every script reloads on next use.
        await io.script("FLUSH");
        expect(await lock.complete(claim)).toBe(true);
        expect(await lock.claim("flush", 10_000)).toEqual({ status: "done" });
      });
    });
  }

  describe("round trips", () => {
    // MONITOR on a private server: other traffic on a shared one would flood the monitor.
    let own: RedisServer | undefined;
    let io: Redis;
    let nr: ReturnType<typeof createClient>;
    beforeAll(async () => {
      own = await startRedisServer();
      io = new Redis(own.url);
      nr = createClient({ url: own.url });
      await nr.connect();
    });
    afterAll(async () => {
      io?.disconnect();
      await nr?.close();
      await own?.stop();
    });
    for (const [name] of redis.named) {
      it(`${name}: each verb and each outcome costs exactly one EVALSHA after warm-up`, async () => {
        const client: RedisScriptClient = name === "ioredis" ? io : nr;
        const lock = new RedisLock({ client, ttlMs: 10_000, prefix: prefix() });
        // Warm the script cache so the count is the steady state.
        const warm = won(await lock.claim("warm", 10_000));
        await lock.renew(warm, 10_000);
        await lock.release(warm);
        await lock.complete(won(await lock.claim("warm", 10_000)));

        const addr = String(
          name === "ioredis" ? await io.client("INFO") : await nr.sendCommand(["CLIENT", "INFO"]),
        ).match(/addr=(\S+)/)?.[1];
        expect(addr).toBeDefined();
        const monitor = await io.monitor();
        const seen: string[][] = [];
        let marker: (() => void) | undefined;
        monitor.on("monitor", (_time: string, args: string[], source: string) => {
          if (source !== addr) return;
          if (args[0]?.toLowerCase() === "echo") marker?.();
          else seen.push(args);
        });
        const ping = async () => {
          const arrived = new Promise<void>((done) => {
            marker = done;
          });
          if (name === "ioredis") await io.echo("mark");
          else await nr.echo("mark");
          await arrived;
        };
        const count = async (op: () => Promise<unknown>) => {
          await ping();
          seen.length = 0;
          await op();
          await ping();
          return seen.map((args) => args[0]?.toLowerCase());
        };
        try {
          let claim: Claim | undefined;
          const counts: Record<string, (string | undefined)[]> = {
            claim: await count(async () => {
              claim = won(await lock.claim("rt", 10_000));
            }),
            held: await count(() => lock.claim("rt", 10_000)),
            renew: await count(() => lock.renew(claim!, 10_000)),
            release: await count(() => lock.release(claim!)),
            reclaim: await count(async () => {
              claim = won(await lock.claim("rt", 10_000));
            }),
            complete: await count(() => lock.complete(claim!)),
            duplicate: await count(() => lock.claim("rt", 10_000)),
          };
          for (const [verb, commands] of Object.entries(counts)) {
            expect({ verb, commands }).toEqual({ verb, commands: ["evalsha"] });
          }
        } finally {
          monitor.disconnect();
        }
      });
    }
  });

  describe("errors and configuration", () => {
    it("a refused connection rejects with BackendError naming verb and key", async () => {
      const port = await freePort();
      const dead = new Redis({
        port,
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        enableOfflineQueue: true,
        retryStrategy: () => null,
      });
      dead.on("error", () => {}); // the rejection is what we assert; keep the log quiet
      try {
        const lock = new RedisLock({ client: dead, prefix: prefix() });
        await expect(lock.claim("k", 1_000)).rejects.toMatchObject({
          code: "BACKEND_ERROR",
          backend: "redis",
          verb: "claim",
          key: "k",
        });
        const claim: Claim = { key: "k", fencingId: 1, leaseExpiresAt: 0 };
        await expect(lock.complete(claim)).rejects.toMatchObject({ verb: "complete" });
      } finally {
        dead.disconnect();
      }
    });

    it("a closed node-redis client rejects with BackendError", async () => {
      const closed = createClient({ url });
      const lock = new RedisLock({ client: closed, prefix: prefix() });
      await expect(lock.claim("k", 1_000)).rejects.toMatchObject({
        code: "BACKEND_ERROR",
        verb: "claim",
      });
    });

    it("validates prefix, ttl, client and lease without I/O", async () => {
      const bad = (options: object) => () =>
        new RedisLock({ client: io, ...options } as ConstructorParameters<typeof RedisLock>[0]);
      for (const p of ["", "x".repeat(129), "a\nb", "tab\t", "é"]) {
        expect(bad({ prefix: p })).toThrow(/prefix must be 1 to 128 printable/);
      }
      expect(bad({ prefix: "x".repeat(128) })).not.toThrow();
      expect(bad({ ttlMs: 0 })).toThrow(/ttlMs/);
      expect(bad({ ttlMs: 1.5 })).toThrow(/ttlMs/);
      expect(() => new RedisLock({ client: {} as unknown as RedisScriptClient })).toThrow(
        /RedisLock option client must be/,
      );
      const lock = new RedisLock({ client: io, prefix: prefix() });
      await expect(lock.claim("k", 0)).rejects.toMatchObject({ code: "INVALID_CONFIGURATION" });
      await expect(lock.claim("", 1_000)).rejects.toMatchObject({ code: "INVALID_KEY" });
      await expect(lock.claim("é".repeat(600), 1_000)).rejects.toMatchObject({
        code: "INVALID_KEY",
      });
    });
  });
});

describe.skipIf(!server)("RedisLock on Redis Cluster", () => {
  let cluster: Awaited<ReturnType<typeof startRedisCluster>> | undefined;
  let io: Cluster | undefined;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    io = new Cluster(cluster.nodes, { lazyConnect: true });
    await io.connect();
  });
  afterAll(async () => {
    io?.disconnect();
    await cluster?.stop();
  });

  it("spreads keys over the masters, each script on the node owning its key", async () => {
    const lock = new RedisLock({ client: io!, ttlMs: 10_000, prefix: prefix() });
    for (let i = 0; i < 30; i++)
      expect(await lock.complete(won(await lock.claim(`k${i}`, 1_000)))).toBe(true);
    const sizes = await Promise.all(io!.nodes("master").map((node) => node.dbsize()));
    expect(sizes.filter((size) => size > 0).length).toBeGreaterThanOrEqual(2);
  });
});
