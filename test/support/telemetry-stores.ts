// The stores the telemetry tests run on: memory, Redis (own key prefix) and PostgreSQL (own
// database and table). Test files only: startOrSkip registers a failing test in CI.
import { Redis } from "ioredis";
import type pg from "pg";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { RedisLock } from "../../src/backends/redis/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import type { LockBackend } from "../../src/index.js";
import { findOrStartRedis } from "./redis.js";
import { startOrSkip } from "./required.js";
import { startPostgres } from "./sql.js";

export interface TelemetryStore {
  name: string;
  /** The class name telemetry reports as `idempotency.backend`. */
  backendName: string;
  make(): Promise<LockBackend>;
}

/** Start what is there; `open` before the tests, `close` after; `run` names keys and tables. */
export async function telemetryStores(run: string) {
  const redisServer = await startOrSkip("Redis", findOrStartRedis);
  const postgres = await startOrSkip("PostgreSQL", startPostgres);
  let redis: Redis | undefined;
  let pool: pg.Pool | undefined;
  const stores: TelemetryStore[] = [
    { name: "memory", backendName: "InMemoryLock", make: async () => new InMemoryLock() },
  ];
  if (redisServer) {
    stores.push({
      name: "redis",
      backendName: "RedisLock",
      make: async () => new RedisLock({ client: redis as Redis, prefix: `${run}:` }),
    });
  }
  if (postgres) {
    stores.push({
      name: "postgres",
      backendName: "SqlLock",
      make: async () => {
        const backend = new SqlLock({ client: pool as pg.Pool, table: `${run}_records` });
        await backend.ensureSchema();
        return backend;
      },
    });
  }
  return {
    stores,
    postgres,
    /** The pg pool, once opened. */
    pool: () => pool as pg.Pool,
    async open(): Promise<void> {
      if (redisServer) {
        redis = new Redis(redisServer.url, { lazyConnect: true });
        await redis.connect();
      }
      if (postgres) pool = postgres.pool(4);
    },
    async close(): Promise<void> {
      if (redis) {
        const keys = await redis.keys(`${run}:*`);
        if (keys.length > 0) await redis.del(...keys);
        redis.disconnect();
      }
      await postgres?.drop();
    },
  };
}
