// RedisLock beyond the contract (that is redis.contract.test.ts): the stored hash and its
// expiry, integer exactness, the server clock, fencing, script errors and SCRIPT FLUSH, the
// legacy texts for a server that refuses a write after TIME, the fingerprint and result fields
// of the hash (and once() over them), one EVALSHA per verb with the arguments it always had,
// connection errors, option validation, and keys spread over a Cluster.
import { randomBytes } from "node:crypto";
import { Cluster, Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { RedisLock, type RedisScriptClient } from "../../src/backends/redis/index.js";
import {
  CLAIM,
  COMPLETE,
  FORCE_RELEASE,
  INSPECT,
  RELEASE,
  RENEW,
} from "../../src/backends/redis/scripts.js";
import { MAX_LEASE_MS, MAX_TTL_MS } from "../../src/core/constants.js";
import type { Claim } from "../../src/core/port.js";
import { trustedPort } from "../../src/core/trusted-port.js";
import { once, PayloadMismatch } from "../../src/index.js";
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
const silent = { info() {}, warn() {}, error() {} };

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

      it("stores a claim's fingerprint and complete's result in the hash, and answers them", async () => {
        const p = prefix();
        const lock = new RedisLock({ client, ttlMs: 10_000, prefix: p });
        expect(lock.supports).toEqual({
          results: true,
          fingerprints: true,
          maxResultBytes: 16 * 1024 * 1024,
        });
        const claim = won(await lock.claim("f", 10_000, { fingerprint: "sha256:abc" }));
        expect(await io.hget(`${p}f`, "fingerprint")).toBe("sha256:abc");
        // held answers the holder's fingerprint, and a held claim writes none of its own.
        expect(await lock.claim("f", 10_000, { fingerprint: "other" })).toEqual({
          status: "held",
          leaseExpiresAt: claim.leaseExpiresAt,
          fingerprint: "sha256:abc",
        });
        expect(await io.hget(`${p}f`, "fingerprint")).toBe("sha256:abc");
        const result = 'r:{"total":99.5,"note":"a \\"q\\" é 中 😀 \u2028\n"}';
        expect(await lock.complete(claim, result)).toBe(true);
        const done = await io.hgetall(`${p}f`);
        expect(done).toMatchObject({ state: "done", fingerprint: "sha256:abc", result });
        expect(await io.pexpiretime(`${p}f`)).toBe(Number(done.expiresAt));
        expect(await lock.claim("f", 10_000)).toEqual({
          status: "done",
          fingerprint: "sha256:abc",
          result,
        });
        // A retried complete (complete.retried) writes no result over the stored one.
        expect(await lock.complete(claim, "r:2")).toBe(true);
        expect(await io.hget(`${p}f`, "result")).toBe(result);
        expect(await lock.inspect("f")).toMatchObject({
          state: "done",
          fingerprint: "sha256:abc",
          result,
        });

        // Either field alone, and the empty result (a result, not none).
        const onlyPrint = won(await lock.claim("fp-only", 10_000, { fingerprint: "p" }));
        expect(await lock.complete(onlyPrint)).toBe(true);
        expect(await io.hexists(`${p}fp-only`, "result")).toBe(0);
        expect(await lock.claim("fp-only", 10_000)).toEqual({ status: "done", fingerprint: "p" });
        const onlyResult = won(await lock.claim("r-only", 10_000));
        expect(await lock.complete(onlyResult, "")).toBe(true);
        expect(await lock.claim("r-only", 10_000)).toEqual({ status: "done", result: "" });
        const onlyResultRecord = await lock.inspect("r-only");
        expect(onlyResultRecord).toMatchObject({ state: "done", result: "" });
        expect(onlyResultRecord).not.toHaveProperty("fingerprint");
        // Neither: the answers and the hash of before fingerprints and results.
        const plain = won(await lock.claim("plain", 10_000));
        expect(await lock.claim("plain", 10_000)).toEqual({
          status: "held",
          leaseExpiresAt: plain.leaseExpiresAt,
        });
        expect(await lock.complete(plain)).toBe(true);
        expect(Object.keys(await io.hgetall(`${p}plain`)).sort()).toEqual([
          "expiresAt",
          "fencingId",
          "leaseExpiresAt",
          "state",
          "token",
        ]);
        expect(await lock.claim("plain", 10_000)).toEqual({ status: "done" });
        expect(Object.keys((await lock.inspect("plain")) ?? {}).sort()).toEqual([
          "expiresAt",
          "fencingId",
          "key",
          "leaseExpiresAt",
          "now",
          "state",
        ]);
      });

      it("every win replaces the fingerprint and deletes the result", async () => {
        const p = prefix();
        const lock = new RedisLock({ client, ttlMs: 10_000, prefix: p });
        // claim.lapsed: the new claim's fingerprint, or none.
        const first = won(await lock.claim("l", LEASE_MS, { fingerprint: "a" }));
        const other = won(await lock.claim("l2", LEASE_MS, { fingerprint: "a" }));
        await sleep(LEASE_MS + 20);
        expect(won(await lock.claim("l", 10_000, { fingerprint: "b" })).fencingId).toBe(
          first.fencingId + 1,
        );
        expect(await io.hget(`${p}l`, "fingerprint")).toBe("b");
        expect(won(await lock.claim("l2", 10_000)).fencingId).toBe(other.fencingId + 1);
        expect(await io.hexists(`${p}l2`, "fingerprint")).toBe(0);
        // An empty fingerprint argument (only the trusted port lets one through) is none.
        won(await trustedPort(lock).claim("empty", 10_000, { fingerprint: "" }));
        expect(await io.hexists(`${p}empty`, "fingerprint")).toBe(0);
        expect((await lock.claim("l2", 10_000, { fingerprint: "a" })).status).toBe("held");
        expect(await lock.claim("l2", 10_000, { fingerprint: "a" })).not.toHaveProperty(
          "fingerprint",
        );

        // claim.expired: a done record past its expiresAt that Redis has not deleted yet (here
        // written by hand with a later expiry); the win keeps neither its result nor its print.
        const [seconds, micros] = await io.time();
        const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
        for (const [name, fingerprint] of [
          ["x", undefined],
          ["y", "new"],
        ] as const) {
          await io.hset(`${p}${name}`, {
            state: "done",
            fencingId: "7",
            leaseExpiresAt: String(now - 2_000),
            expiresAt: String(now - 1_000),
            token: "t",
            fingerprint: "old",
            result: "r:1",
          });
          await io.pexpire(`${p}${name}`, 10_000);
          const claim = won(
            await lock.claim(name, 10_000, fingerprint === undefined ? undefined : { fingerprint }),
          );
          expect(claim.fencingId).toBe(8);
          const record = await io.hgetall(`${p}${name}`);
          expect(record.state).toBe("claimed");
          expect(record).not.toHaveProperty("result");
          expect(record.fingerprint).toBe(fingerprint);
          expect(await io.pexpiretime(`${p}${name}`)).toBe(claim.leaseExpiresAt + 10_000);
          // Completed without a result, it answers none of the old one.
          expect(await lock.complete(claim)).toBe(true);
          expect(await lock.claim(name, 10_000)).toEqual(
            fingerprint === undefined ? { status: "done" } : { status: "done", fingerprint },
          );
        }
      });

      it("once() replays the result stored with the record; a new record runs the body again", async () => {
        const p = prefix();
        const backend = new RedisLock({ client, ttlMs: 300, prefix: p });
        const options = { backend, leaseMs: 10_000, logger: silent, telemetry: false };
        let runs = 0;
        const body = async () => {
          runs += 1;
          return { orderId: "o-1", total: 12.5, lines: [{ sku: "é😀", n: runs }] };
        };
        const first = await once("o", { ...options, fingerprint: "p1" }, body);
        expect(first).toEqual({ orderId: "o-1", total: 12.5, lines: [{ sku: "é😀", n: 1 }] });
        expect(await once("o", { ...options, fingerprint: "p1" }, body)).toEqual(first);
        expect(runs).toBe(1);
        const stored = await io.hgetall(`${p}o`);
        expect(stored).toMatchObject({ state: "done", fingerprint: "p1" });
        expect(stored.result?.startsWith("r:")).toBe(true);
        await expect(once("o", { ...options, fingerprint: "p2" }, body)).rejects.toBeInstanceOf(
          PayloadMismatch,
        );
        // Past its ttl Redis deleted the record: the next once runs and stores its own result.
        await sleep(400);
        expect(await once("o", options, body)).toEqual({ ...first, lines: [{ sku: "é😀", n: 2 }] });
        expect(await io.hexists(`${p}o`, "fingerprint")).toBe(0);
        expect(runs).toBe(2);
      });

      it("keeps a large multi-byte result exactly as given", async () => {
        const p = prefix();
        const lock = new RedisLock({ client, ttlMs: 10_000, prefix: p });
        // 3.25 MiB of UTF-8: 1-, 2-, 3- and 4-byte characters (U+2028 among them), which the
        // script argument, Lua's strings and the client's decoding must pass as they are.
        const result = `r:${"aé中😀\u2028".repeat(256 * 1024)}`;
        const claim = won(await lock.claim("big", 10_000, { fingerprint: "f" }));
        expect(await lock.complete(claim, result)).toBe(true);
        expect(await io.hstrlen(`${p}big`, "result")).toBe(Buffer.byteLength(result));
        const done = await lock.claim("big", 10_000);
        expect(done.status === "done" && done.result === result).toBe(true);
        await io.del(`${p}big`);
      });
    });
  }

  it("runs every script's legacy text where the server refuses a write after TIME", async () => {
    // Redis 4 (5 and 6 with lua-replicate-commands off) refuses the scripts' writes until they
    // call redis.replicate_commands(); here a client answers that refusal for every script
    // without the call, and the real server runs the legacy texts.
    const legacyLine = "redis.replicate_commands()\n";
    const refusal = () =>
      new Error(
        "ERR Error running script: Write commands not allowed after non deterministic commands.",
      );
    const legacyShas = new Set(
      [CLAIM, COMPLETE, RELEASE, RENEW, INSPECT, FORCE_RELEASE].map((s) => s.legacy?.sha),
    );
    let refused = 0;
    const client = {
      evalsha: async (sha: string, keys: number, ...rest: string[]) => {
        if (!legacyShas.has(sha)) {
          refused++;
          throw refusal();
        }
        return io.evalsha(sha, keys, ...rest);
      },
      eval: async (text: string, keys: number, ...rest: string[]) => {
        if (!text.startsWith(legacyLine)) throw refusal();
        return io.eval(text, keys, ...rest);
      },
    };
    const p = prefix();
    const lock = new RedisLock({ client, ttlMs: 10_000, prefix: p });
    const first = won(await lock.claim("k", 10_000, { fingerprint: "fp" }));
    expect(refused).toBe(1);
    expect(await lock.claim("k", 10_000)).toMatchObject({ status: "held", fingerprint: "fp" });
    expect(await lock.renew(first, 10_000)).toBe(true);
    expect(await lock.complete(first, "res")).toBe(true);
    expect(await lock.claim("k", 10_000)).toEqual({
      status: "done",
      fingerprint: "fp",
      result: "res",
    });
    const other = won(await lock.claim("m", 10_000));
    await lock.release(other);
    const again = won(await lock.claim("m", 10_000));
    expect(again.fencingId).toBe(other.fencingId + 2);
    expect(await lock.inspect("m")).toMatchObject({ state: "claimed", fencingId: again.fencingId });
    expect(await lock.forceRelease("m", again.fencingId)).toEqual({
      status: "released",
      fencingId: again.fencingId + 1,
    });
    expect(refused).toBe(1);
    await io.del(`${p}k`, `${p}m`);
  });

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
      it(`${name}: each verb and each outcome costs exactly one EVALSHA after warm-up, with a fingerprint or result only when given`, async () => {
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
          // Each command, and how many script arguments it sent (EVALSHA sha 1 key ...ARGV).
          return seen.map((args) => `${args[0]?.toLowerCase()} ${args.length - 4}`);
        };
        try {
          let claim: Claim | undefined;
          let printed: Claim | undefined;
          const counts: Record<string, string[]> = {
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
            "claim with a fingerprint": await count(async () => {
              printed = won(await lock.claim("rt-fp", 10_000, { fingerprint: "p" }));
            }),
            "held, answering the fingerprint": await count(() =>
              lock.claim("rt-fp", 10_000, { fingerprint: "q" }),
            ),
            "complete with a result": await count(() => lock.complete(printed!, "r:1")),
            "duplicate, answering fingerprint and result": await count(() =>
              lock.claim("rt-fp", 10_000),
            ),
          };
          // The arguments of before fingerprints and results, unless the call gives one.
          const argv: Record<string, number> = {
            claim: 3,
            held: 3,
            renew: 3,
            release: 2,
            reclaim: 3,
            complete: 2,
            duplicate: 3,
            "claim with a fingerprint": 4,
            "held, answering the fingerprint": 4,
            "complete with a result": 3,
            "duplicate, answering fingerprint and result": 3,
          };
          for (const [verb, commands] of Object.entries(counts)) {
            expect({ verb, commands }).toEqual({ verb, commands: [`evalsha ${argv[verb]}`] });
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
