// The model-based test of the transition table (test/support/model-run.ts) on RedisLock:
// ioredis, node-redis and GLIDE, on one server and on a Redis Cluster, judged by the server's TIME.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, it } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { modelRunOptionsFromEnv, modelTimeoutMs, runModel } from "../support/model-run.js";
import {
  findOrStartRedis,
  glideClient,
  redisClientPair,
  redisClusterClients,
} from "../support/redis.js";
import { startOrSkip } from "../support/required.js";

const server = await startOrSkip("Redis", findOrStartRedis);
const options = modelRunOptionsFromEnv();
const prefix = () => `idem-model:${randomBytes(6).toString("hex")}:`;

describe.skipIf(!server)("RedisLock against the transition table", () => {
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

  const named = [...redis.named, [glide.name, () => glide.client()] as const];
  for (const [name, client] of named) {
    it(
      `redis (${name})`,
      async () => {
        const c = typeof client === "function" ? client() : client;
        await runModel(
          {
            name: `redis (${name})`,
            make: (ttlMs) => new RedisLock({ client: c, ttlMs, prefix: prefix() }),
            clock: "server",
          },
          options,
        );
      },
      modelTimeoutMs(options),
    );
  }
});

describe.skipIf(!server)("RedisLock on Redis Cluster against the transition table", () => {
  const cluster = redisClusterClients();
  beforeAll(() => cluster.start());
  afterAll(() => cluster.stop());

  for (const [name, client] of cluster.named) {
    it(
      `redis cluster (${name})`,
      async () => {
        await runModel(
          {
            name: `redis cluster (${name})`,
            make: (ttlMs) => new RedisLock({ client: client(), ttlMs, prefix: prefix() }),
            clock: "server",
          },
          options,
        );
      },
      modelTimeoutMs(options),
    );
  }
});
