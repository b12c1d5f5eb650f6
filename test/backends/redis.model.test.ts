// The model-based test of the transition table (test/support/model-run.ts) on RedisLock:
// ioredis and node-redis, on one server and on a Redis Cluster, judged by the server's TIME.
import { randomBytes } from "node:crypto";
import { Cluster } from "ioredis";
import { createCluster } from "redis";
import { afterAll, beforeAll, describe, it } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { modelRunOptionsFromEnv, modelTimeoutMs, runModel } from "../support/model-run.js";
import { findOrStartRedis, redisClientPair, startRedisCluster } from "../support/redis.js";
import { startOrSkip } from "../support/required.js";

const server = await startOrSkip("Redis", findOrStartRedis);
const options = modelRunOptionsFromEnv();
const prefix = () => `idem-model:${randomBytes(6).toString("hex")}:`;

describe.skipIf(!server)("RedisLock against the transition table", () => {
  const redis = redisClientPair(server?.url ?? "redis://127.0.0.1:6379");
  beforeAll(() => redis.connect());
  afterAll(async () => {
    await redis.close();
    await server?.stop();
  });

  for (const [name, client] of redis.named) {
    it(
      `redis (${name})`,
      async () => {
        await runModel(
          {
            name: `redis (${name})`,
            make: (ttlMs) => new RedisLock({ client, ttlMs, prefix: prefix() }),
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
  let cluster: Awaited<ReturnType<typeof startRedisCluster>> | undefined;
  let io: Cluster | undefined;
  let nr: ReturnType<typeof createCluster> | undefined;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    io = new Cluster(cluster.nodes, { lazyConnect: true });
    await io.connect();
    nr = createCluster({
      rootNodes: cluster.nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
    });
    await nr.connect();
  });
  afterAll(async () => {
    io?.disconnect();
    await nr?.close();
    await cluster?.stop();
  });

  it(
    "redis cluster (ioredis Cluster)",
    async () => {
      await runModel(
        {
          name: "redis cluster (ioredis Cluster)",
          make: (ttlMs) => new RedisLock({ client: io!, ttlMs, prefix: prefix() }),
          clock: "server",
        },
        options,
      );
    },
    modelTimeoutMs(options),
  );
  it(
    "redis cluster (node-redis createCluster)",
    async () => {
      await runModel(
        {
          name: "redis cluster (node-redis createCluster)",
          make: (ttlMs) => new RedisLock({ client: nr!, ttlMs, prefix: prefix() }),
          clock: "server",
        },
        options,
      );
    },
    modelTimeoutMs(options),
  );
});
