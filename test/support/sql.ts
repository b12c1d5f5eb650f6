// Real SQL servers for the SqlLock tests: a fresh database per run, dropped afterwards.
// An unreachable server rejects, saying why; required.ts decides whether that fails the run.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import mysql from "mysql2/promise";
import pg from "pg";

const runName = () =>
  `idem_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;

export interface PgRun {
  database: string;
  url: string;
  pool(max?: number): pg.Pool;
  drop(): Promise<void>;
}

export async function startPostgres(): Promise<PgRun> {
  const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(`PostgreSQL unreachable at ${adminUrl}: ${(error as Error).message}`);
  }
  const database = runName();
  await admin.query(`CREATE DATABASE ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const pools: pg.Pool[] = [];
  return {
    database,
    url: url.toString(),
    pool(max = 10) {
      const pool = new pg.Pool({ connectionString: url.toString(), max });
      // A terminated backend surfaces on idle clients too; the tests provoke that on purpose.
      pool.on("error", () => {});
      pools.push(pool);
      return pool;
    },
    async drop() {
      await Promise.allSettled(pools.map((p) => p.end()));
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    },
  };
}

export interface MysqlRun {
  database: string;
  pool(limit?: number): mysql.Pool;
  admin: mysql.Connection;
  drop(): Promise<void>;
}

export async function startMysql(): Promise<MysqlRun> {
  const adminUrl = process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/";
  let admin: mysql.Connection;
  try {
    admin = await mysql.createConnection({ uri: adminUrl, connectTimeout: 10_000 });
  } catch (error) {
    throw new Error(`MySQL/MariaDB unreachable at ${adminUrl}: ${(error as Error).message}`);
  }
  const database = runName();
  await admin.query(`CREATE DATABASE ${database}`);
  const pools: mysql.Pool[] = [];
  return {
    database,
    admin,
    pool(limit = 10) {
      const pool = mysql.createPool({
        uri: adminUrl,
        database,
        connectionLimit: limit,
        supportBigNumbers: true,
      });
      pools.push(pool);
      return pool;
    },
    async drop() {
      await Promise.allSettled(pools.map((p) => p.end()));
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
      await admin.end();
    },
  };
}

export interface SqliteRun {
  dir: string;
  open(file: string): Database.Database;
  drop(): Promise<void>;
}

export function startSqlite(): SqliteRun {
  const dir = mkdtempSync(join(tmpdir(), "idem-sqlite-"));
  const open: Database.Database[] = [];
  return {
    dir,
    open(file) {
      const db = new Database(join(dir, file));
      open.push(db);
      return db;
    },
    async drop() {
      for (const db of open) if (db.open) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
