// The exported contract suite on SqlLock: PostgreSQL, MariaDB (the mysql dialect) and SQLite,
// with the lockInTransaction cases writing business rows to a table beside the records. The
// SQL-specific cases are in sql.test.ts. Each target drops the tables its create() made, in
// the suite's cleanup; the last cases check that no table is left behind.
import type Database from "better-sqlite3";
import type mysql from "mysql2/promise";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { SqlLock } from "../../src/backends/sql/index.js";
import type { TransactionalContractTarget } from "../../src/testing/index.js";
import { describeBackendContract } from "../../src/testing/vitest.js";
import { freshTable, openSqlStores } from "./sql-stores.js";

const { pgPool, myPool, sqlite } = await openSqlStores();
const ROWS = "contract_rows";

/** What a dialect's suite left: the tables counted before it and after it, and how many it dropped. */
const leftovers: Array<{
  name: string;
  before: number;
  count: () => Promise<number>;
  dropped: () => number;
}> = [];

/** Fresh tables for create(), remembered, and a cleanup that drops each of them. */
function tablesDroppedBy(drop: (table: string) => Promise<unknown>) {
  const made: string[] = [];
  let dropped = 0;
  return {
    fresh: () => {
      const table = freshTable();
      made.push(table);
      return table;
    },
    cleanup: async () => {
      for (const table of made.splice(0)) {
        await drop(table);
        dropped += 1;
      }
    },
    dropped: () => dropped,
  };
}

if (pgPool) {
  await pgPool.query(`CREATE TABLE ${ROWS} (id text PRIMARY KEY, value text NOT NULL)`);
  const rows: TransactionalContractTarget<pg.PoolClient> = {
    async insert(tx, id, value) {
      await tx.query(`INSERT INTO ${ROWS} (id, value) VALUES ($1, $2)`, [id, value]);
    },
    async read(id) {
      const { rows } = await pgPool.query(`SELECT value FROM ${ROWS} WHERE id = $1`, [id]);
      return rows[0]?.value;
    },
  };
  const count = async () => {
    const { rows } = await pgPool.query(
      "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = current_schema()",
    );
    return rows[0].n as number;
  };
  const tables = tablesDroppedBy((table) => pgPool.query(`DROP TABLE ${table}`));
  leftovers.push({ name: "postgres", before: await count(), count, dropped: tables.dropped });
  describeBackendContract({
    name: "SqlLock postgres",
    create: async ({ ttlMs }) => {
      const backend = new SqlLock({ client: pgPool, table: tables.fresh(), ttlMs });
      await backend.ensureSchema();
      return backend;
    },
    cleanup: tables.cleanup,
    leaseMs: 150,
    concurrency: 64,
    transactional: rows,
  });
}

if (myPool) {
  await myPool.query(`CREATE TABLE ${ROWS} (id VARCHAR(255) PRIMARY KEY, value TEXT NOT NULL)`);
  const rows: TransactionalContractTarget<mysql.PoolConnection> = {
    async insert(tx, id, value) {
      await tx.execute(`INSERT INTO ${ROWS} (id, value) VALUES (?, ?)`, [id, value]);
    },
    async read(id) {
      const [found] = await myPool.execute(`SELECT value FROM ${ROWS} WHERE id = ?`, [id]);
      return (found as Array<{ value: string }>)[0]?.value;
    },
  };
  const count = async () => {
    const [rows] = await myPool.query(
      "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE()",
    );
    return Number((rows as Array<{ n: number }>)[0]?.n);
  };
  const tables = tablesDroppedBy((table) => myPool.query(`DROP TABLE ${table}`));
  leftovers.push({ name: "mysql", before: await count(), count, dropped: tables.dropped });
  describeBackendContract({
    name: "SqlLock mysql",
    create: async ({ ttlMs }) => {
      const backend = new SqlLock({ client: myPool, table: tables.fresh(), ttlMs });
      await backend.ensureSchema();
      return backend;
    },
    cleanup: tables.cleanup,
    leaseMs: 150,
    concurrency: 64,
    transactional: rows,
  });
}

// One connection, one file: each case's records get a table of their own in it, and the
// business rows share one table beside them.
const db = sqlite.open("contract.db");
db.pragma("journal_mode = WAL");
db.exec(`CREATE TABLE ${ROWS} (id TEXT PRIMARY KEY, value TEXT NOT NULL)`);
const sqliteRows: TransactionalContractTarget<Database.Database> = {
  async insert(tx, id, value) {
    tx.prepare(`INSERT INTO ${ROWS} (id, value) VALUES (?, ?)`).run(id, value);
  },
  async read(id) {
    const row = db.prepare(`SELECT value FROM ${ROWS} WHERE id = ?`).get(id) as
      | { value: string }
      | undefined;
    return row?.value;
  },
  // One writer at a time: a reclaim cannot land while a body's transaction is open.
  exclusive: true,
};
const sqliteCount = async () =>
  (
    db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as {
      n: number;
    }
  ).n;
const sqliteTables = tablesDroppedBy(async (table) => db.exec(`DROP TABLE ${table}`));
leftovers.push({
  name: "sqlite",
  before: await sqliteCount(),
  count: sqliteCount,
  dropped: sqliteTables.dropped,
});
describeBackendContract({
  name: "SqlLock sqlite",
  create: async ({ ttlMs }) => {
    const backend = new SqlLock({ client: db, table: sqliteTables.fresh(), ttlMs });
    await backend.ensureSchema();
    return backend;
  },
  cleanup: sqliteTables.cleanup,
  leaseMs: 100,
  concurrency: 64,
  transactional: sqliteRows,
});

// Registered after the suites: vitest runs each suite's afterAll (the cleanup) before these.
describe("the contract suite leaves no table behind", () => {
  it.each(leftovers)("$name: as many tables after the suite as before it", async (store) => {
    expect(await store.count()).toBe(store.before);
    // One table per case and the warm-up's: the cleanup had tables to drop.
    expect(store.dropped()).toBeGreaterThan(10);
  });
});
