// Hostile keys through lock(), 8 callers racing per key, against InMemoryLock, Redis
// (ioredis and node-redis), PostgreSQL, MariaDB and SQLite; the property itself is in
// hostile-keys.ts. The Datastore and Firestore files run it on their emulators.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { InMemoryLock } from "../../src/index.js";
import { findOrStartRedis, redisClientPair } from "../support/redis.js";
import { startOrSkip } from "../support/required.js";
import { describeHostileKeys } from "./hostile-keys.js";
import { openSqlStores } from "./sql-stores.js";

const tag = () => randomBytes(5).toString("hex");

// --- the stores, each found or started by the test/support harnesses -------------------------

const redis = await startOrSkip("Redis", findOrStartRedis);
const { targets: sqlTargets } = await openSqlStores();
const redisClients = redis ? redisClientPair(redis.url) : undefined;

beforeAll(async () => {
  await redisClients?.connect();
});

afterAll(async () => {
  await redisClients?.close();
  await redis?.stop();
});

// Runs per store: fewer where each run costs more round trips.
const SQL_RUNS = { postgres: 60, mysql: 50, sqlite: 60 } as const;
const SQL_NAMES = {
  postgres: "SqlLock postgres",
  mysql: "SqlLock mysql (MariaDB)",
  sqlite: "SqlLock sqlite",
} as const;

describeHostileKeys("InMemoryLock", async () => new InMemoryLock(), 200);
for (const [label, client] of redisClients?.named ?? []) {
  describeHostileKeys(
    `RedisLock (${label})`,
    async () => new RedisLock({ client, prefix: `hostile:${tag()}:` }),
    100,
  );
}
for (const target of sqlTargets) {
  describeHostileKeys(
    SQL_NAMES[target.dialect],
    async () => (await target.make())[0]!,
    SQL_RUNS[target.dialect],
  );
}
