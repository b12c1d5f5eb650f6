/**
 * The demo's backend choice, in one place. Each entry builds a LockBackend from a plain,
 * serialisable config, so the crashing child process can build the same one from what
 * the parent sends it. Adding a store (sqlite, postgres, …) is one more entry here.
 */
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import {
  InMemoryLock,
  type LockBackend,
  type TransactionalLockBackend,
} from "gcp-pubsub-idempotency";
import { DatastoreLock } from "gcp-pubsub-idempotency/datastore";
import { FirestoreLock } from "gcp-pubsub-idempotency/firestore";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
import { SqlLock } from "gcp-pubsub-idempotency/sql";
import { Redis } from "ioredis";
import mysql from "mysql2/promise";
import pg from "pg";

/** What the parent passes to every process that opens the backend. */
export interface BackendConfig {
  /** Per-run namespace: a prefix, table or kind name so runs never see each other's keys. */
  readonly runId: string;
  readonly redisUrl: string;
  /** The SQLite file every process of the run opens. */
  readonly sqlitePath: string;
  readonly databaseUrl: string;
  readonly mysqlUrl: string;
}

/** The default SQLite file of a run: in the temp folder, one per run. */
export function sqlitePathFor(runId: string): string {
  const dir = join(tmpdir(), "gcp-pubsub-idempotency-demo");
  mkdirSync(dir, { recursive: true });
  return join(dir, `${runId}.db`);
}

/**
 * The Google client's options. On the emulator (its *_EMULATOR_HOST set) the demo talks to
 * loopback only: a project of its own unless one is named, and no GCE metadata-server lookup
 * (google-auth-library would otherwise probe 169.254.169.254 for credentials the emulator
 * does not need). Against your real project the client finds project and credentials itself.
 */
function googleOptions(emulatorHostVariable: string): { projectId?: string } {
  const projectId = process.env.GOOGLE_CLOUD_PROJECT ?? process.env.GCLOUD_PROJECT;
  if (process.env[emulatorHostVariable]) {
    process.env.METADATA_SERVER_DETECTION ??= "none";
    return { projectId: projectId ?? "idempotency-demo" };
  }
  return projectId ? { projectId } : {};
}

/** A table name of the run's own, so runs on one database never see each other's keys. */
const tableFor = (runId: string) => `demo_${runId.replace(/[^a-z0-9]/gi, "_")}`;

export interface OpenBackend {
  readonly lock: LockBackend;
  /** The transactional sink on this store (`--sink transaction`); only the SQL stores have one. */
  readonly sink?: TransactionSink;
  /** Remove this run's records (best effort) and close connections. */
  close(options?: { cleanup?: boolean }): Promise<void>;
}

/**
 * A business table of the run's own in the store's database, with NO unique constraint, that
 * the demo writes with one plain INSERT per order inside the store's transaction
 * (`transaction: true`): DONE commits with the row, so each order lands exactly once.
 */
export interface TransactionSink {
  /** The store's lock, with its transactions. `tx` is the driver's own handle. */
  readonly lock: TransactionalLockBackend<unknown>;
  /** The plain INSERT of one order row, on the transaction's connection. */
  insert(tx: unknown, orderId: string): Promise<void>;
  /** The table's rows, counted per order id. */
  rowsByOrder(): Promise<Map<string, number>>;
}

/** The business table's DDL: an order id per row, nothing unique. */
const ordersDdl = (table: string) =>
  `CREATE TABLE IF NOT EXISTS ${table} (order_id VARCHAR(64) NOT NULL)`;
const countSql = (table: string) =>
  `SELECT order_id, count(*) AS n FROM ${table} GROUP BY order_id`;
const countsOf = (rows: readonly { order_id: string; n: unknown }[]) =>
  new Map(rows.map((row) => [row.order_id, Number(row.n)]));

export interface BackendEntry {
  readonly describe: string;
  /**
   * True when another process can open the same store: then the crash case runs in a real
   * child process; otherwise the parent claims the key and abandons it in-process.
   */
  readonly shared: boolean;
  open(config: BackendConfig): Promise<OpenBackend>;
}

/**
 * A pooled SQL server: a records table and an orders table of the run's own, dropped on
 * cleanup. `insert` and `rows` speak the driver's own dialect on its own handles.
 */
async function openSqlPool<Tx>(
  pool: (pg.Pool | mysql.Pool) & { query(sql: string): Promise<unknown>; end(): Promise<void> },
  config: BackendConfig,
  insert: (tx: Tx, table: string, orderId: string) => Promise<unknown>,
  rows: (sql: string) => Promise<{ order_id: string; n: unknown }[]>,
): Promise<OpenBackend> {
  const table = tableFor(config.runId);
  const orders = `${table}_orders`;
  const lock = new SqlLock({ client: pool, table, ttlMs: 10 * 60_000 });
  await lock.ensureSchema();
  await pool.query(ordersDdl(orders));
  return {
    lock,
    sink: {
      lock: lock as TransactionalLockBackend<unknown>,
      insert: async (tx, orderId) => {
        await insert(tx as Tx, orders, orderId);
      },
      rowsByOrder: async () => countsOf(await rows(countSql(orders))),
    },
    async close(options) {
      if (options?.cleanup) {
        await pool.query(`DROP TABLE IF EXISTS ${table}`);
        await pool.query(`DROP TABLE IF EXISTS ${orders}`);
      }
      await pool.end();
    },
  };
}

export const BACKENDS = {
  sqlite: {
    describe: "SqlLock on an embedded SQLite file (better-sqlite3, WAL) in the temp folder",
    shared: true,
    async open(config) {
      const db = new Database(config.sqlitePath);
      const lock = new SqlLock({ client: db, table: "demo_records", ttlMs: 10 * 60_000 });
      await lock.ensureSchema();
      db.exec(ordersDdl("demo_orders"));
      return {
        lock,
        sink: {
          lock: lock as TransactionalLockBackend<unknown>,
          async insert(tx, orderId) {
            (tx as Database.Database)
              .prepare("INSERT INTO demo_orders (order_id) VALUES (?)")
              .run(orderId);
          },
          rowsByOrder: async () =>
            countsOf(
              db.prepare(countSql("demo_orders")).all() as { order_id: string; n: number }[],
            ),
        },
        async close(options) {
          db.close();
          if (options?.cleanup) {
            for (const end of ["", "-wal", "-shm"])
              rmSync(`${config.sqlitePath}${end}`, { force: true });
          }
        },
      };
    },
  },
  postgres: {
    describe: "SqlLock on PostgreSQL at --database-url / DATABASE_URL / 127.0.0.1:5432",
    shared: true,
    open(config) {
      const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 16 });
      return openSqlPool(
        pool,
        config,
        (tx: pg.PoolClient, table, orderId) =>
          tx.query(`INSERT INTO ${table} (order_id) VALUES ($1)`, [orderId]),
        async (sql) => (await pool.query<{ order_id: string; n: string }>(sql)).rows,
      );
    },
  },
  mysql: {
    describe: "SqlLock on MySQL/MariaDB at --mysql-url / MYSQL_URL / 127.0.0.1:3306/test",
    shared: true,
    open(config) {
      const pool = mysql.createPool({ uri: config.mysqlUrl, connectionLimit: 16 });
      return openSqlPool(
        pool,
        config,
        (tx: mysql.PoolConnection, table, orderId) =>
          tx.query(`INSERT INTO ${table} (order_id) VALUES (?)`, [orderId]),
        async (sql) => (await pool.query(sql))[0] as { order_id: string; n: number }[],
      );
    },
  },
  datastore: {
    describe: "DatastoreLock on the emulator at DATASTORE_EMULATOR_HOST (or your project's ADC)",
    shared: true,
    async open(config) {
      // A namespace per run: the emulator's message ids restart, a run's records must not.
      const lock = new DatastoreLock({
        ...googleOptions("DATASTORE_EMULATOR_HOST"),
        namespace: `demo-${config.runId}`,
        ttlMs: 10 * 60_000,
      });
      return { lock, close: () => lock.close() };
    },
  },
  firestore: {
    describe: "FirestoreLock on the emulator at FIRESTORE_EMULATOR_HOST (or your project's ADC)",
    shared: true,
    async open(config) {
      const lock = new FirestoreLock({
        ...googleOptions("FIRESTORE_EMULATOR_HOST"),
        collection: `demo-${config.runId}`,
        ttlMs: 10 * 60_000,
      });
      return { lock, close: () => lock.close() };
    },
  },
  memory: {
    describe: "InMemoryLock in this process (no server; crashes are simulated in-process)",
    shared: false,
    async open() {
      return { lock: new InMemoryLock(), async close() {} };
    },
  },
  redis: {
    describe: "RedisLock on --redis-url / REDIS_URL / redis://127.0.0.1:6379",
    shared: true,
    async open(config) {
      // Fail fast instead of ioredis's endless reconnecting when no server is there.
      const client = new Redis(config.redisUrl, {
        lazyConnect: true,
        maxRetriesPerRequest: 1,
        retryStrategy: () => null,
      });
      try {
        await client.connect();
      } catch (error) {
        client.disconnect();
        throw new Error(`cannot reach Redis at ${config.redisUrl}: ${String(error)}`);
      }
      const prefix = `demo:${config.runId}:`;
      return {
        lock: new RedisLock({ client, prefix, ttlMs: 10 * 60_000 }),
        async close(options) {
          if (options?.cleanup) {
            let cursor = "0";
            do {
              const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
              cursor = next;
              if (keys.length > 0) await client.unlink(...keys);
            } while (cursor !== "0");
          }
          client.disconnect();
        },
      };
    },
  },
} satisfies Record<string, BackendEntry>;

export type BackendName = keyof typeof BACKENDS;

export function isBackendName(name: string): name is BackendName {
  return Object.hasOwn(BACKENDS, name);
}

export function openBackend(name: BackendName, config: BackendConfig): Promise<OpenBackend> {
  const entry: BackendEntry = BACKENDS[name];
  return entry.open(config);
}
