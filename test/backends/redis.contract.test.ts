// The exported contract suite on RedisLock: ioredis, node-redis and GLIDE, on one server and on a
// Redis Cluster (test/support/redis.ts, redisTargets). The Redis-specific cases are in redis.test.ts.
// On the one server (shared, never flushed) each target's cleanup deletes the keys under its
// prefixes, some of which would live 10 years; the Cluster is this file's own.
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { describeBackendContract } from "../../src/testing/vitest.js";
import { findOrStartRedis, redisTargets } from "../support/redis.js";
import { startOrSkip } from "../support/required.js";

const server = await startOrSkip("Redis", findOrStartRedis);

const run = `idem-test:${randomBytes(6).toString("hex")}:`;
let counter = 0;

/** Every key under `pattern` on the server, through SCAN. */
async function keysOf(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1_000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  return keys;
}

/** Delete the keys under `root` on the single server (the Cluster is stopped with its data). */
async function deleteUnder(url: string, root: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true });
  try {
    await redis.connect();
    const keys = await keysOf(redis, `${root}*`);
    for (let i = 0; i < keys.length; i += 500) await redis.unlink(...keys.slice(i, i + 500));
  } finally {
    redis.disconnect();
  }
}
const LEASE_MS = 50;

describe.skipIf(!server)("RedisLock", () => {
  const redis = redisTargets(server?.url ?? "redis://127.0.0.1:6379");
  beforeAll(() => redis.start());
  afterAll(async () => {
    await redis.stop();
    await server?.stop();
  });

  const url = server?.url ?? "redis://127.0.0.1:6379";
  for (const [index, { title, client }] of redis.targets.entries()) {
    const root = `${run}${title.startsWith("redis cluster") ? "cluster" : index}:`;
    describeBackendContract({
      name: title,
      create: ({ ttlMs }) =>
        new RedisLock({ client: client(), ttlMs, prefix: `${root}${counter++}:` }),
      leaseMs: LEASE_MS,
      ...(title.startsWith("redis cluster") ? {} : { cleanup: () => deleteUnder(url, root) }),
    });
  }

  // After the suites (vitest runs each one's afterAll, the cleanup, before these).
  it("leaves no key on the server under the run's prefix", async () => {
    const redis = new Redis(url, { lazyConnect: true });
    try {
      await redis.connect();
      expect(await keysOf(redis, `${run}*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });
});
