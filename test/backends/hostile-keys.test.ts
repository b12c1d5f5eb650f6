// Hostile keys through lock(), 8 callers racing per key, against InMemoryLock, Redis
// (ioredis and node-redis), PostgreSQL, MariaDB and SQLite; the property itself is in
// hostile-keys.ts. The Datastore and Firestore contract files run it on their emulators.
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, it } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import type { LockBackend } from "../../src/core/types.js";
import { InMemoryLock } from "../../src/index.js";
import { findOrStartRedis } from "../harness/redis.js";
import { startMysql, startPostgres, startSqlite } from "../harness/sql.js";
import { describeHostileKeys } from "./hostile-keys.js";

const ci = process.env.CI;
const inCi = Boolean(ci && ci !== "false" && ci !== "0");
const tag = () => randomBytes(5).toString("hex");

// --- the stores, each found or started by the existing harnesses ---------------------------

const [redisFound, postgres, mariadb] = await Promise.all([
  findOrStartRedis(),
  startPostgres(),
  startMysql(),
]);
const sqlite = startSqlite();
const redis = "reason" in redisFound ? undefined : redisFound;
const io = redis ? new Redis(redis.url, { lazyConnect: true }) : undefined;
const nr = redis ? createClient({ url: redis.url }) : undefined;
const pgPool = postgres.ok ? postgres.value.pool(10) : undefined;
const myPool = mariadb.ok ? mariadb.value.pool(10) : undefined;
const sqliteDb = sqlite.open("hostile.db");

beforeAll(async () => {
  await io?.connect();
  await nr?.connect();
});

afterAll(async () => {
  io?.disconnect();
  await nr?.close();
  await redis?.stop();
  if (postgres.ok) await postgres.value.drop();
  if (mariadb.ok) await mariadb.value.drop();
  await sqlite.drop();
});

interface Target {
  name: string;
  /** Why it cannot run, or undefined. */
  missing: string | undefined;
  /** A backend over a store of its own (prefix or table). */
  make(): Promise<LockBackend>;
  runs: number;
}

let tables = 0;
const freshTable = () => `hk_${Date.now().toString(36)}_${tables++}`;
const sqlTarget = async (client: NonNullable<typeof pgPool | typeof myPool | typeof sqliteDb>) => {
  const backend = new SqlLock({ client, table: freshTable() });
  await backend.ensureSchema();
  return backend;
};

const targets: Target[] = [
  { name: "InMemoryLock", missing: undefined, make: async () => new InMemoryLock(), runs: 200 },
  ...(["ioredis", "node-redis"] as const).map((label) => ({
    name: `RedisLock (${label})`,
    missing: "reason" in redisFound ? redisFound.reason : undefined,
    make: async () =>
      new RedisLock({ client: (label === "ioredis" ? io : nr)!, prefix: `hostile:${tag()}:` }),
    runs: 100,
  })),
  {
    name: "SqlLock postgres",
    missing: postgres.ok ? undefined : postgres.reason,
    make: () => sqlTarget(pgPool!),
    runs: 60,
  },
  {
    name: "SqlLock mysql (MariaDB)",
    missing: mariadb.ok ? undefined : mariadb.reason,
    make: () => sqlTarget(myPool!),
    runs: 50,
  },
  { name: "SqlLock sqlite", missing: undefined, make: () => sqlTarget(sqliteDb), runs: 60 },
];

for (const target of targets) {
  if (target.missing !== undefined) {
    const reason = target.missing;
    if (inCi) {
      it(`${target.name} is reachable (required in CI)`, () => {
        throw new Error(`${reason}: CI requires every backend to run the hostile keys`);
      });
    } else {
      describe.skip(`${target.name}: ${reason}`, () => {
        it("skipped", () => {});
      });
    }
    continue;
  }
  describeHostileKeys(target.name, target.make, target.runs);
}
