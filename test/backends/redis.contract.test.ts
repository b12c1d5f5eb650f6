// The exported contract suite on RedisLock: ioredis, node-redis and GLIDE, on one server and on a
// Redis Cluster (test/support/redis.ts, redisTargets). The Redis-specific cases are in redis.test.ts.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { describeBackendContract } from "../../src/testing/vitest.js";
import { findOrStartRedis, redisTargets } from "../support/redis.js";
import { startOrSkip } from "../support/required.js";

const server = await startOrSkip("Redis", findOrStartRedis);

const prefix = () => `idem-test:${randomBytes(6).toString("hex")}:`;
const LEASE_MS = 50;

describe.skipIf(!server)("RedisLock", () => {
  const redis = redisTargets(server?.url ?? "redis://127.0.0.1:6379");
  beforeAll(() => redis.start());
  afterAll(async () => {
    await redis.stop();
    await server?.stop();
  });

  for (const { title, client } of redis.targets) {
    describeBackendContract({
      name: title,
      create: ({ ttlMs }) => new RedisLock({ client: client(), ttlMs, prefix: prefix() }),
      leaseMs: LEASE_MS,
    });
  }
});
