// The exported contract suite on RedisLock: ioredis, node-redis and GLIDE, on one server and on a
// Redis Cluster. The Redis-specific cases are in redis.test.ts.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { describeBackendContract } from "../../src/testing/vitest.js";
import {
  findOrStartRedis,
  glideClient,
  redisClientPair,
  redisClusterClients,
} from "../support/redis.js";
import { startOrSkip } from "../support/required.js";

const server = await startOrSkip("Redis", findOrStartRedis);

const prefix = () => `idem-test:${randomBytes(6).toString("hex")}:`;
const LEASE_MS = 50;

describe.skipIf(!server)("RedisLock", () => {
  const redis = redisClientPair(server?.url ?? "redis://127.0.0.1:6379");
  const glide = glideClient(server?.url ?? "redis://127.0.0.1:6379");
  beforeAll(async () => {
    await redis.connect();
    await glide.connect();
  });
  afterAll(async () => {
    await redis.close();
    glide.close();
    await server?.stop();
  });

  for (const [name, client] of redis.named) {
    describeBackendContract({
      name: `redis (${name})`,
      create: ({ ttlMs }) => new RedisLock({ client, ttlMs, prefix: prefix() }),
      leaseMs: LEASE_MS,
    });
  }
  describeBackendContract({
    name: `redis (${glide.name})`,
    create: ({ ttlMs }) => new RedisLock({ client: glide.client(), ttlMs, prefix: prefix() }),
    leaseMs: LEASE_MS,
  });
});

describe.skipIf(!server)("RedisLock on Redis Cluster", () => {
  const cluster = redisClusterClients();
  beforeAll(() => cluster.start());
  afterAll(() => cluster.stop());

  for (const [name, client] of cluster.named) {
    describeBackendContract({
      name: `redis cluster (${name})`,
      create: ({ ttlMs }) => new RedisLock({ client: client(), ttlMs, prefix: prefix() }),
      leaseMs: LEASE_MS,
    });
  }
});
