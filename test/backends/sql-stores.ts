// The SQL stores a test file runs SqlLock on: a private PostgreSQL and MariaDB database each
// (when the server cannot be reached: skipped, or failed in CI, by test/support/required.ts)
// and SQLite files in a temp dir; all dropped after the file. Shared by sql.contract.test.ts,
// sql.test.ts and hostile-keys.test.ts.
import { afterAll } from "vitest";
import { type SqlDialect, SqlLock } from "../../src/backends/sql/index.js";
import { startOrSkip } from "../support/required.js";
import { startMysql, startPostgres, startSqlite } from "../support/sql.js";

/** One dialect's way to make backends, each on a fresh table. */
export interface SqlTarget {
  dialect: SqlDialect;
  /** `count` backends sharing one fresh table (SQLite: one connection each, on one file). */
  make(ttlMs?: number, count?: number): Promise<SqlLock[]>;
}

let tableCounter = 0;
export const freshTable = () => `t${Date.now().toString(36)}_${tableCounter++}`;
const ttl = (ttlMs: number | undefined) => (ttlMs === undefined ? {} : { ttlMs });

/** Starts the stores (registering their cleanup); PostgreSQL and MariaDB are left out if down. */
export async function openSqlStores() {
  const postgres = await startOrSkip("PostgreSQL", startPostgres);
  const mariadb = await startOrSkip("MariaDB", startMysql);
  const sqlite = startSqlite();
  afterAll(async () => {
    await postgres?.drop();
    await mariadb?.drop();
    await sqlite.drop();
  });
  // One pool of 10 connections per server, shared by every backend of the file.
  const pgPool = postgres?.pool(10);
  const myPool = mariadb?.pool(10);

  const onPool = (dialect: SqlDialect, client: NonNullable<typeof pgPool | typeof myPool>) => ({
    dialect,
    async make(ttlMs?: number) {
      const backend = new SqlLock({ client, table: freshTable(), ...ttl(ttlMs) });
      await backend.ensureSchema();
      return [backend];
    },
  });
  const onSqlite: SqlTarget = {
    dialect: "sqlite",
    async make(ttlMs, count = 1) {
      const table = freshTable();
      const file = `${table}.db`;
      const backends: SqlLock[] = [];
      for (let i = 0; i < count; i++) {
        backends.push(new SqlLock({ client: sqlite.open(file), table, ...ttl(ttlMs) }));
      }
      await backends[0]!.ensureSchema();
      return backends;
    },
  };
  const targets: SqlTarget[] = [
    ...(pgPool ? [onPool("postgres", pgPool)] : []),
    ...(myPool ? [onPool("mysql", myPool)] : []),
    onSqlite,
  ];
  return { postgres, mariadb, sqlite, pgPool, myPool, sqliteTarget: onSqlite, targets };
}
