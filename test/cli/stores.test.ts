// The CLI on Redis, PostgreSQL, MariaDB and SQLite (their real servers), run as the bin; the
// Datastore and Firestore emulators are in google.test.ts.
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import { runCli } from "../../src/cli/main.js";
import { freshTable, openSqlStores } from "../backends/sql-stores.js";
import { won } from "../support/claims.js";
import { fakeTerminal } from "../support/cli.js";
import { findOrStartRedis } from "../support/redis.js";
import { startOrSkip } from "../support/required.js";
import { describeCli } from "./cli-cases.js";

const redisServer = await startOrSkip("Redis", findOrStartRedis);
const { postgres, mariadb, sqlite, pgPool, myPool } = await openSqlStores();

describe.skipIf(!redisServer)("redis", () => {
  const client = new Redis(redisServer?.url ?? "redis://127.0.0.1:6379", { lazyConnect: true });
  const prefix = `idem-cli:${randomBytes(6).toString("hex")}:`;
  afterAll(async () => {
    client.disconnect();
    await redisServer?.stop();
  });
  describeCli({
    name: "redis",
    args: () => ["--backend", redisServer?.url ?? "", "--prefix", prefix],
    backend: (ttlMs) => new RedisLock({ client, prefix, ...(ttlMs ? { ttlMs } : {}) }),
    selfExpiring: true,
    read: () => {
      const at = new URL(redisServer?.url ?? "redis://127.0.0.1:6379").host;
      return {
        line: `read redis ${at}, prefix ${prefix}`,
        json: { store: "redis", at, prefix },
      };
    },
  });
});

/** A SqlLock target on one fresh table, for the bin and for this process. */
function sqlTarget(
  name: string,
  url: string,
  client: ConstructorParameters<typeof SqlLock>[0]["client"],
  store: "postgres" | "mysql" | "sqlite",
) {
  const table = freshTable();
  let ready: Promise<void> | undefined;
  // Where the bin says it read: host:port/database, or the SQLite file.
  const at = () => {
    if (store === "sqlite") return url.slice("sqlite:".length);
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`;
  };
  return {
    name,
    args: () => ["--backend", url, "--table", table],
    read: () => ({
      line: `read ${store} ${at()}, table ${table}`,
      json: { store, at: at(), table },
    }),
    backend: async (ttlMs?: number) => {
      const backend = new SqlLock({ client, table, ...(ttlMs ? { ttlMs } : {}) });
      ready ??= backend.ensureSchema();
      await ready;
      // The pool is the file's: closing the lock leaves it open.
      return backend;
    },
  };
}

if (postgres && pgPool) describeCli(sqlTarget("postgres", postgres.url, pgPool, "postgres"));
if (mariadb && myPool) {
  const base = new URL(process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/");
  base.pathname = `/${mariadb.database}`;
  describeCli(sqlTarget("mariadb", base.toString(), myPool, "mysql"));
}
const file = `${freshTable()}.db`;
describeCli(sqlTarget("sqlite", `sqlite:${sqlite.dir}/${file}`, sqlite.open(file), "sqlite"));

describe("release asks first on a terminal (in process, answers typed in)", () => {
  const file = `${freshTable()}.db`;
  const url = `sqlite:${sqlite.dir}/${file}`;
  const target = sqlTarget("sqlite", url, sqlite.open(file), "sqlite");

  for (const [answer, code, message] of [
    ["n", 1, "not released: not confirmed"],
    ["", 1, "not released: not confirmed"],
    ["yes", 0, "released"],
  ] as const) {
    it(`answered ${JSON.stringify(answer)} → exit ${code}`, async () => {
      const backend = await target.backend();
      const key = `ask:${answer}:${Date.now()}`;
      const claim = won(await backend.claim(key, 60_000));
      const { io, cli } = fakeTerminal({ GCP_PUBSUB_IDEMPOTENCY_BACKEND: url }, [answer]);
      expect(await runCli(["release", "--table", target.args()[3] as string, key], cli)).toBe(code);
      expect(io.asked).toEqual([
        `Release ${key} at fence ${claim.fencingId}? A holder that still runs will be fenced out. [y/N] `,
      ]);
      expect(io.out).toContain(message);
      const after = await backend.claim(key, 60_000);
      if (code === 0) expect(won(after).fencingId).toBe(claim.fencingId + 2);
      else expect(after).toEqual({ status: "held", leaseExpiresAt: claim.leaseExpiresAt });
    });
  }
});
