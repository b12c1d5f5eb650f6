// The model-based test of the transition table (test/support/model-run.ts) on RedisLock:
// ioredis, node-redis and GLIDE, on one server and on a Redis Cluster, judged by the server's TIME.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, it } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { modelRunOptionsFromEnv, modelTimeoutMs, runModel } from "../support/model-run.js";
import { findOrStartRedis, redisTargets } from "../support/redis.js";
import { startOrSkip } from "../support/required.js";

const server = await startOrSkip("Redis", findOrStartRedis);
const options = modelRunOptionsFromEnv();
const prefix = () => `idem-model:${randomBytes(6).toString("hex")}:`;

describe.skipIf(!server)("RedisLock against the transition table", () => {
  const redis = redisTargets(server?.url ?? "redis://127.0.0.1:6379");
  beforeAll(() => redis.start());
  afterAll(async () => {
    await redis.stop();
    await server?.stop();
  });

  for (const { title, client } of redis.targets) {
    it(
      title,
      async () => {
        await runModel(
          {
            name: title,
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
