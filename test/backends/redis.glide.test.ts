// RedisLock through GLIDE (@valkey/valkey-glide), checked from outside GLIDE. Powertools'
// issue #5716: GLIDE silently dropped options an adapter passed in a shape it did not read, so
// de-duplication was quietly off while every call "succeeded". Here each verb made through
// GLIDE (claim, complete, release, and a fingerprint and result with them), on one server and on
// a Redis Cluster, is judged by reading the raw record and its expiry with a separate plain
// client (ioredis), never through GLIDE.
import { randomBytes } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import { Redis as IoRedis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GlideScriptClient, RedisLock } from "../../src/backends/redis/index.js";
import { won } from "../support/claims.js";
import { findOrStartRedis, glideClient, redisClusterClients } from "../support/redis.js";
import { startOrSkip } from "../support/required.js";

const server = await startOrSkip("Redis", findOrStartRedis);
const prefix = () => `idem-glide:${randomBytes(6).toString("hex")}:`;
const TTL_MS = 600_000;
const LEASE_MS = 120_000;

/** The record as stored, read by the plain client: hash fields, PTTL and PEXPIRETIME. */
async function raw(plain: Redis | Cluster, key: string) {
  const [hash, pttl, expireAt] = await Promise.all([
    plain.hgetall(key),
    plain.pttl(key),
    plain.pexpiretime(key),
  ]);
  return { hash, pttl, expireAt };
}

function describeGlideWrites(
  title: string,
  clients: () => { glide: GlideScriptClient; plain: Redis | Cluster },
) {
  describe(title, () => {
    it("a claim writes the claimed hash with PEXPIREAT at lease end + ttl", async () => {
      const { glide, plain } = clients();
      const p = prefix();
      const lock = new RedisLock({ client: glide, ttlMs: TTL_MS, prefix: p });
      const claim = won(await lock.claim("claimed", LEASE_MS));
      const record = await raw(plain, `${p}claimed`);
      expect(record.hash).toMatchObject({
        state: "claimed",
        fencingId: String(claim.fencingId),
        leaseExpiresAt: String(claim.leaseExpiresAt),
        expiresAt: String(claim.leaseExpiresAt + TTL_MS),
      });
      expect(record.expireAt).toBe(claim.leaseExpiresAt + TTL_MS);
      // A key without expiry answers -1; one that never got written answers -2.
      expect(record.pttl).toBeGreaterThan(TTL_MS);
      expect(record.pttl).toBeLessThanOrEqual(LEASE_MS + TTL_MS);
      // The write is what de-duplicates: a second claim through GLIDE sees it.
      expect((await lock.claim("claimed", LEASE_MS)).status).toBe("held");
    });

    it("a complete writes done with PEXPIREAT at now + ttl, and later claims see done", async () => {
      const { glide, plain } = clients();
      const p = prefix();
      const lock = new RedisLock({ client: glide, ttlMs: TTL_MS, prefix: p });
      const claim = won(await lock.claim("done", LEASE_MS));
      expect(await lock.complete(claim)).toBe(true);
      const record = await raw(plain, `${p}done`);
      expect(record.hash.state).toBe("done");
      expect(record.hash.fencingId).toBe(String(claim.fencingId));
      expect(record.expireAt).toBe(Number(record.hash.expiresAt));
      // Done now: its expiry is about ttl away, well before the claim's lease + ttl.
      expect(record.pttl).toBeGreaterThan(0);
      expect(record.pttl).toBeLessThanOrEqual(TTL_MS);
      expect((await lock.claim("done", LEASE_MS)).status).toBe("done");
    });

    it("a release ends the lease and raises the fence in the record, with its expiry", async () => {
      const { glide, plain } = clients();
      const p = prefix();
      const lock = new RedisLock({ client: glide, ttlMs: TTL_MS, prefix: p });
      const claim = won(await lock.claim("released", LEASE_MS));
      await lock.release(claim);
      const record = await raw(plain, `${p}released`);
      expect(record.hash.state).toBe("claimed");
      expect(record.hash.fencingId).toBe(String(claim.fencingId + 1));
      expect(Number(record.hash.leaseExpiresAt)).toBeLessThan(claim.leaseExpiresAt);
      expect(record.expireAt).toBe(Number(record.hash.expiresAt));
      expect(record.pttl).toBeGreaterThan(0);
      expect(record.pttl).toBeLessThanOrEqual(TTL_MS);
      // The released claim cannot complete; a new claim wins at once with the next fence.
      expect(await lock.complete(claim)).toBe(false);
      expect(won(await lock.claim("released", LEASE_MS)).fencingId).toBe(claim.fencingId + 2);
    });

    it("a fingerprint and a result land in the hash, and claims through GLIDE answer them", async () => {
      const { glide, plain } = clients();
      const p = prefix();
      const lock = new RedisLock({ client: glide, ttlMs: TTL_MS, prefix: p });
      const claim = won(await lock.claim("fields", LEASE_MS, { fingerprint: "sha256:é" }));
      expect((await raw(plain, `${p}fields`)).hash.fingerprint).toBe("sha256:é");
      expect(await lock.claim("fields", LEASE_MS)).toEqual({
        status: "held",
        leaseExpiresAt: claim.leaseExpiresAt,
        fingerprint: "sha256:é",
      });
      const result = 'r:{"a":"中😀\u2028"}';
      expect(await lock.complete(claim, result)).toBe(true);
      const record = await raw(plain, `${p}fields`);
      expect(record.hash).toMatchObject({ state: "done", fingerprint: "sha256:é", result });
      expect(record.expireAt).toBe(Number(record.hash.expiresAt));
      expect(await lock.claim("fields", LEASE_MS)).toEqual({
        status: "done",
        fingerprint: "sha256:é",
        result,
      });
      // A nil field within GLIDE's array reply (no fingerprint, a result; and the reverse).
      const resultOnly = won(await lock.claim("result-only", LEASE_MS));
      await lock.complete(resultOnly, "u:");
      expect(await lock.claim("result-only", LEASE_MS)).toEqual({ status: "done", result: "u:" });
      const printOnly = won(await lock.claim("print-only", LEASE_MS, { fingerprint: "f" }));
      await lock.complete(printOnly);
      expect(await lock.claim("print-only", LEASE_MS)).toEqual({
        status: "done",
        fingerprint: "f",
      });
      expect(await lock.inspect("print-only")).toMatchObject({ state: "done", fingerprint: "f" });
      expect(await lock.inspect("print-only")).not.toHaveProperty("result");
    });
  });
}

describe.skipIf(!server)("RedisLock through GLIDE, one server", () => {
  const url = server?.url ?? "redis://127.0.0.1:6379";
  const glide = glideClient(url);
  const plain = new IoRedis(url, { lazyConnect: true });
  beforeAll(async () => {
    await glide.connect();
    await plain.connect();
  });
  afterAll(async () => {
    glide.close();
    plain.disconnect();
    await server?.stop();
  });
  describeGlideWrites("GlideClient, read back by ioredis", () => ({
    glide: glide.client(),
    plain,
  }));
});

describe.skipIf(!server)("RedisLock through GLIDE, Redis Cluster", () => {
  const cluster = redisClusterClients();
  beforeAll(() => cluster.start());
  afterAll(() => cluster.stop());
  const get = (name: string) => cluster.named.find(([n]) => n === name)?.[1];
  describeGlideWrites("GlideClusterClient, read back by ioredis Cluster", () => ({
    glide: get("GLIDE GlideClusterClient")?.() as GlideScriptClient,
    plain: get("ioredis Cluster")?.() as Cluster,
  }));
});
