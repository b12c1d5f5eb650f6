// The exported contract suite on SqlLock: PostgreSQL, MariaDB (the mysql dialect) and SQLite,
// with the lockInTransaction cases writing business rows to a table beside the records. The
// SQL-specific cases are in sql.test.ts.
import type Database from "better-sqlite3";
import type mysql from "mysql2/promise";
import type pg from "pg";
import { SqlLock } from "../../src/backends/sql/index.js";
import type { TransactionalContractTarget } from "../../src/testing/index.js";
import { describeBackendContract } from "../../src/testing/vitest.js";
import { freshTable, openSqlStores } from "./sql-stores.js";

const { pgPool, myPool, sqlite } = await openSqlStores();
const ROWS = "contract_rows";

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
  describeBackendContract({
    name: "SqlLock postgres",
    create: async ({ ttlMs }) => {
      const backend = new SqlLock({ client: pgPool, table: freshTable(), ttlMs });
      await backend.ensureSchema();
      return backend;
    },
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
  describeBackendContract({
    name: "SqlLock mysql",
    create: async ({ ttlMs }) => {
      const backend = new SqlLock({ client: myPool, table: freshTable(), ttlMs });
      await backend.ensureSchema();
      return backend;
    },
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
describeBackendContract({
  name: "SqlLock sqlite",
  create: async ({ ttlMs }) => {
    const backend = new SqlLock({ client: db, table: freshTable(), ttlMs });
    await backend.ensureSchema();
    return backend;
  },
  leaseMs: 100,
  concurrency: 64,
  transactional: sqliteRows,
});
