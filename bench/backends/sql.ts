/**
 * SqlLock on PostgreSQL and MariaDB (a private database each, created and dropped) and on
 * SQLite (a WAL file in a temp dir), beside two other ways to use the same table:
 *   floor    — the same number of round trips SqlLock makes, each the plainest statement
 *              that could do its part and reading what SqlLock reads: a claim reads the
 *              record and inserts one only when there is none (PostgreSQL: one statement,
 *              a CTE that SELECTs the row then INSERTs … ON CONFLICT DO NOTHING; MariaDB and
 *              SQLite: a SELECT, then INSERT when no row was found, as SqlLock's peek does);
 *              complete an UPDATE; release an UPDATE that raises the fence and rewrites
 *              the lease and expiry, as a release must (so it writes every cycle);
 *   row-lock — the classic claim design: BEGIN; SELECT … FOR UPDATE; INSERT or UPDATE;
 *              COMMIT (BEGIN IMMEDIATE on SQLite), then the complete UPDATE.
 * PostgreSQL statements are named prepared statements; mysql2 uses execute() (prepared).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { SqlLock } from "gcp-pubsub-idempotency/sql";
import mysql from "mysql2/promise";
import pg from "pg";
import { processCpu, type Settings } from "../runner.js";
import {
  type BackendBench,
  type Contender,
  check,
  KEYS,
  LEASE_MS,
  oursContender,
  RUN_ID,
  seed,
  TTL_MS,
  version,
} from "../suite.js";

export const TABLE = "idempotency_records";
const SCHEMA_COLUMNS = `"key", state, fencing_id, lease_expires_at, expires_at, token`;

// ------------------------------------------------------------------ the floor, any dialect

/** The raw statements a floor is made of; each call is one round trip. */
interface FloorStatements {
  /**
   * The claim's read and write: the record's state when the key has one (nothing written),
   * undefined when a claimed row was inserted. One statement on PostgreSQL; a SELECT, then
   * an INSERT only when no row was found, where SqlLock reads before it writes (MySQL, SQLite).
   */
  claim(key: string): Promise<string | undefined>;
  /** A SELECT of the row by key, where SqlLock reads before it writes (MySQL, SQLite). */
  select?(key: string): Promise<string | undefined>;
  /** An UPDATE of a first delivery's row by key: the complete. */
  update(key: string): Promise<unknown>;
  /** An upsert that bumps the fence: the reclaim of a mutex cycle. */
  bump(key: string): Promise<unknown>;
  /**
   * An UPDATE by key that writes what a release must (the fence + 1, the lease's end, the
   * record's expiry): the release of a mutex cycle. Resolves to the rows it changed.
   */
  release(key: string): Promise<number>;
}

/** A SELECT then, when no row was found, an INSERT: the claim of a dialect that reads first. */
function selectThenInsert(
  select: (key: string) => Promise<string | undefined>,
  insert: (key: string) => Promise<number>,
): (key: string) => Promise<string | undefined> {
  return async (key) => {
    const state = await select(key);
    if (state !== undefined) return state;
    check((await insert(key)) === 1, "floor insert of a key it found absent");
    return undefined;
  };
}

function sqlFloor(name: string, settings: Settings, s: FloorStatements): Contender {
  return {
    name,
    role: "floor",
    ops: {
      first: async (i) => {
        const key = KEYS.first(name, i);
        check((await s.claim(key)) === undefined, "floor insert of a fresh key");
        await s.update(key);
      },
      duplicate: async (i) =>
        check((await s.claim(KEYS.dup(i, settings))) === "done", "floor read the done record"),
      contention: async () =>
        check((await s.claim(KEYS.held)) === "claimed", "floor read the held record"),
      mutex: async (_i, w) => {
        const key = KEYS.mutex(name, w);
        await s.select?.(key);
        await s.bump(key);
        // `update` matches fence 1 only: from the second cycle on it would change nothing
        // and commit without a write, which no release of ours may do.
        check((await s.release(key)) === 1, "floor release changes the row");
      },
    },
  };
}

// ------------------------------------------------------------------ the row-lock design

interface RowState {
  state: string;
  fencing_id: string | number;
  lease_expires_at: string | number;
  expires_at: string | number;
}

/** One open transaction of the row-lock design, on one connection. */
interface RowLockTx {
  select(key: string): Promise<RowState | undefined>;
  /** False when another transaction inserted the key first. */
  insert(key: string, now: number): Promise<boolean>;
  reclaim(key: string, now: number): Promise<void>;
}

interface RowLockStore {
  /** BEGIN, fn, COMMIT; a rejected fn rolls back. `retry` from fn rolls back and runs again. */
  transaction<T>(fn: (tx: RowLockTx) => Promise<T | typeof RETRY>): Promise<T>;
  complete(key: string): Promise<unknown>;
}

const RETRY = Symbol("retry");
type RowLockOutcome = "won" | "done" | "held";

function rowLockClaim(store: RowLockStore, key: string): Promise<RowLockOutcome> {
  return store.transaction<RowLockOutcome>(async (tx) => {
    const now = Date.now();
    const found = await tx.select(key);
    if (found === undefined) return (await tx.insert(key, now)) ? "won" : RETRY;
    const until = Number(found.state === "done" ? found.expires_at : found.lease_expires_at);
    if (until > now) return found.state === "done" ? "done" : "held";
    await tx.reclaim(key, now);
    return "won";
  });
}

function rowLockContender(name: string, settings: Settings, store: RowLockStore): Contender {
  return {
    name,
    role: "design",
    ops: {
      first: async (i) => {
        const key = KEYS.first(name, i);
        check((await rowLockClaim(store, key)) === "won", "row-lock claim of a fresh key");
        await store.complete(key);
      },
      duplicate: async (i) =>
        check((await rowLockClaim(store, KEYS.dup(i, settings))) === "done", "row-lock dup"),
      contention: async () =>
        check((await rowLockClaim(store, KEYS.held)) === "held", "row-lock held"),
    },
  };
}

/** The values of a freshly claimed row, by the client's clock (the designs compared use it). */
const claimedRow = (now: number) => [now + LEASE_MS, now + LEASE_MS + TTL_MS, "t"] as const;
/** The key and values of a released row: the lease ends now, the record expires a ttl later. */
const released = (key: string, now = Date.now()) => [key, now, now + TTL_MS] as const;

// ------------------------------------------------------------------ PostgreSQL

const PG_SQL = {
  insert: `INSERT INTO ${TABLE} (${SCHEMA_COLUMNS}) VALUES ($1, 'claimed', 1, $2, $3, $4)
    ON CONFLICT ("key") DO NOTHING`,
  // The floor's claim: SqlLock's shape (read the record; insert only when there is none;
  // return the row either way) with none of its logic (no liveness test, no DO UPDATE arm).
  readOrInsert: `WITH found AS (
      SELECT state, fencing_id, lease_expires_at, token FROM ${TABLE} WHERE "key" = $1::text
    ), inserted AS (
      INSERT INTO ${TABLE} (${SCHEMA_COLUMNS})
      SELECT $1::text, 'claimed', 1, $2::bigint, $3::bigint, $4::text
      WHERE NOT EXISTS (SELECT 1 FROM found)
      ON CONFLICT ("key") DO NOTHING
      RETURNING state, fencing_id, lease_expires_at, token
    )
    SELECT state, false AS inserted FROM found
    UNION ALL
    SELECT state, true AS inserted FROM inserted`,
  update: `UPDATE ${TABLE} SET state = 'done', expires_at = $2 WHERE "key" = $1 AND fencing_id = 1`,
  release: `UPDATE ${TABLE} SET fencing_id = fencing_id + 1, lease_expires_at = $2, expires_at = $3
    WHERE "key" = $1`,
  bump: `INSERT INTO ${TABLE} AS r (${SCHEMA_COLUMNS}) VALUES ($1, 'claimed', 1, $2, $3, $4)
    ON CONFLICT ("key") DO UPDATE SET fencing_id = r.fencing_id + 1`,
  select: `SELECT state, fencing_id, lease_expires_at, expires_at FROM ${TABLE}
    WHERE "key" = $1 FOR UPDATE`,
  reclaim: `UPDATE ${TABLE} SET state = 'claimed', fencing_id = fencing_id + 1,
    lease_expires_at = $2, expires_at = $3, token = $4 WHERE "key" = $1`,
  begin: "BEGIN",
  commit: "COMMIT",
  rollback: "ROLLBACK",
};
type PgName = keyof typeof PG_SQL;
const pgq = (db: pg.Pool | pg.PoolClient, name: PgName, values: unknown[] = []) =>
  db.query({ name: `bench_${name}`, text: PG_SQL[name], values });

function pgContenders(pool: pg.Pool, settings: Settings): Contender[] {
  const fresh = (key: string) => [key, ...claimedRow(Date.now())];
  const floor: FloorStatements = {
    claim: async (key) => {
      const row = (await pgq(pool, "readOrInsert", fresh(key))).rows[0] as
        | { state: string; inserted: boolean }
        | undefined;
      check(row !== undefined, "the floor's claim returns the row");
      return row!.inserted ? undefined : row!.state;
    },
    update: (key) => pgq(pool, "update", [key, Date.now() + TTL_MS]),
    bump: (key) => pgq(pool, "bump", fresh(key)),
    release: async (key) => (await pgq(pool, "release", [...released(key)])).rowCount ?? 0,
  };
  const rowLock: RowLockStore = {
    async transaction(fn) {
      for (;;) {
        const client = await pool.connect();
        try {
          await pgq(client, "begin");
          const result = await fn({
            select: async (key) => (await pgq(client, "select", [key])).rows[0] as RowState,
            insert: async (key, now) =>
              (await pgq(client, "insert", [key, ...claimedRow(now)])).rowCount === 1,
            reclaim: async (key, now) => {
              await pgq(client, "reclaim", [key, ...claimedRow(now)]);
            },
          });
          await pgq(client, result === RETRY ? "rollback" : "commit");
          if (result !== RETRY) return result;
        } catch (error) {
          await client.query("ROLLBACK").catch(() => {});
          throw error;
        } finally {
          client.release();
        }
      }
    },
    complete: (key) => pgq(pool, "update", [key, Date.now() + TTL_MS]),
  };
  return [
    oursContender("ours", new SqlLock({ client: pool, ttlMs: TTL_MS }), settings, "floor"),
    sqlFloor("floor", settings, floor),
    rowLockContender("row-lock", settings, rowLock),
  ];
}

/** A private database on the server of DATABASE_URL (or the local one), dropped by drop(). */
export async function privatePgDatabase(
  label: string,
): Promise<{ url: string; version: string; drop: () => Promise<void> }> {
  const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  await admin.connect();
  const name = `idem_bench_${label}_${RUN_ID}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const serverVersion = (
    (await admin.query("SHOW server_version")).rows[0] as { server_version: string }
  ).server_version;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    version: serverVersion,
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

export const postgresBench: BackendBench = {
  id: "postgres",
  title: "PostgreSQL",
  async start(settings) {
    const db = await privatePgDatabase("main");
    try {
      const setup = new pg.Pool({ connectionString: db.url, max: 4 });
      const backend = new SqlLock({ client: setup, ttlMs: TTL_MS });
      await backend.ensureSchema();
      await seed(backend, settings);
      await setup.end();
    } catch (error) {
      await db.drop();
      throw error;
    }
    return {
      versions: `PostgreSQL ${db.version}; pg ${version("pg")}; a pg Pool with max = in flight`,
      floorNote:
        "a claim is one statement that reads the record and inserts a claimed one only when there is none (a CTE: SELECT, then INSERT … ON CONFLICT DO NOTHING, returning the row either way; SqlLock's shape without its liveness test or DO UPDATE arm), + one UPDATE for a first delivery; a mutex cycle is an upsert + an UPDATE that releases (fence + 1, lease and expiry rewritten); all named prepared statements",
      async open(concurrency) {
        const pool = new pg.Pool({ connectionString: db.url, max: concurrency });
        pool.on("error", () => {});
        return { contenders: pgContenders(pool, settings), close: () => pool.end() };
      },
      stop: () => db.drop(),
      // Every postgres process: the backends serving the pool, plus the writer and WAL
      // writer whose work a commit causes.
      serverCpu: processCpu(["postgres"]),
    };
  },
};

// ------------------------------------------------------------------ MariaDB / MySQL

const MY_COLUMNS = SCHEMA_COLUMNS.replaceAll('"', "`");
const MY_SQL = {
  insert: `INSERT IGNORE INTO ${TABLE} (${MY_COLUMNS}) VALUES (?, 'claimed', 1, ?, ?, ?)`,
  select: `SELECT state, fencing_id, lease_expires_at, expires_at FROM ${TABLE} WHERE \`key\` = ?`,
  update: `UPDATE ${TABLE} SET state = 'done', expires_at = ? WHERE \`key\` = ? AND fencing_id = 1`,
  release: `UPDATE ${TABLE} SET fencing_id = fencing_id + 1, lease_expires_at = ?, expires_at = ?
    WHERE \`key\` = ?`,
  bump: `INSERT INTO ${TABLE} (${MY_COLUMNS}) VALUES (?, 'claimed', 1, ?, ?, ?)
    ON DUPLICATE KEY UPDATE fencing_id = fencing_id + 1`,
  lockSelect: `SELECT state, fencing_id, lease_expires_at, expires_at FROM ${TABLE}
    WHERE \`key\` = ? FOR UPDATE`,
  reclaim: `UPDATE ${TABLE} SET state = 'claimed', fencing_id = fencing_id + 1,
    lease_expires_at = ?, expires_at = ?, token = ? WHERE \`key\` = ?`,
};
const affected = (result: unknown) => (result as { affectedRows: number }).affectedRows;

function myContenders(pool: mysql.Pool, settings: Settings): Contender[] {
  const fresh = (key: string) => [key, ...claimedRow(Date.now())];
  const select = async (key: string) =>
    ((await pool.execute(MY_SQL.select, [key]))[0] as Array<{ state: string }>)[0]?.state;
  const floor: FloorStatements = {
    claim: selectThenInsert(select, async (key) =>
      affected((await pool.execute(MY_SQL.insert, fresh(key)))[0]),
    ),
    select,
    update: (key) => pool.execute(MY_SQL.update, [Date.now() + TTL_MS, key]),
    bump: (key) => pool.execute(MY_SQL.bump, fresh(key)),
    release: async (key) => {
      const [, now, expires] = released(key);
      return affected((await pool.execute(MY_SQL.release, [now, expires, key]))[0]);
    },
  };
  const rowLock: RowLockStore = {
    async transaction(fn) {
      for (let attempt = 0; ; ) {
        const conn = await pool.getConnection();
        let released = false;
        try {
          await conn.query("START TRANSACTION");
          const result = await fn({
            select: async (key) =>
              ((await conn.execute(MY_SQL.lockSelect, [key]))[0] as RowState[])[0],
            insert: async (key, now) =>
              affected((await conn.execute(MY_SQL.insert, [key, ...claimedRow(now)]))[0]) === 1,
            reclaim: async (key, now) => {
              await conn.execute(MY_SQL.reclaim, [...claimedRow(now), key]);
            },
          });
          await conn.query(result === RETRY ? "ROLLBACK" : "COMMIT");
          if (result !== RETRY) return result;
        } catch (error) {
          await conn.query("ROLLBACK").catch(() => {});
          // InnoDB gap locks on absent keys deadlock concurrent inserters (fresh keys share the
          // gap at the end of the index): retry after a jittered, growing pause, as SqlLock
          // does; retrying at once livelocks at 64 in flight.
          if ((error as { errno?: number }).errno !== 1213) throw error;
          conn.release();
          released = true;
          await new Promise((done) => setTimeout(done, Math.random() * 5 * ++attempt));
        } finally {
          if (!released) conn.release();
        }
      }
    },
    complete: (key) => pool.execute(MY_SQL.update, [Date.now() + TTL_MS, key]),
  };
  return [
    oursContender("ours", new SqlLock({ client: pool, ttlMs: TTL_MS }), settings, "floor"),
    sqlFloor("floor", settings, floor),
    rowLockContender("row-lock", settings, rowLock),
  ];
}

export const mariadbBench: BackendBench = {
  id: "mariadb",
  title: "MariaDB",
  async start(settings) {
    const adminUrl = process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/";
    const admin = await mysql.createConnection({ uri: adminUrl, connectTimeout: 3000 });
    const database = `idem_bench_${RUN_ID}`;
    await admin.query(`CREATE DATABASE ${database}`);
    const drop = async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
      await admin.end();
    };
    const poolOf = (limit: number) =>
      mysql.createPool({
        uri: adminUrl,
        database,
        connectionLimit: limit,
        supportBigNumbers: true,
      });
    try {
      const [rows] = await admin.query("SELECT version() AS v");
      const serverVersion = (rows as Array<{ v: string }>)[0]?.v ?? "?";
      const setup = poolOf(4);
      const backend = new SqlLock({ client: setup, ttlMs: TTL_MS });
      await backend.ensureSchema();
      await seed(backend, settings);
      await setup.end();
      return {
        versions: `MariaDB ${serverVersion}; mysql2 ${version("mysql2")}; a mysql2/promise pool with connectionLimit = in flight`,
        floorNote:
          "as many statements as SqlLock sends: a SELECT per claim, + INSERT IGNORE when no row was found (SqlLock's read, then its write), + one UPDATE for a first delivery; a mutex cycle is a SELECT + an upsert + an UPDATE that releases (fence + 1, lease and expiry rewritten)",
        async open(concurrency) {
          const pool = poolOf(concurrency);
          return { contenders: myContenders(pool, settings), close: () => pool.end() };
        },
        stop: drop,
        serverCpu: processCpu(["mariadbd"]),
      };
    } catch (error) {
      await drop();
      throw error;
    }
  },
};

// ------------------------------------------------------------------ SQLite

export const sqliteBench: BackendBench = {
  id: "sqlite",
  title: "SQLite",
  async start(settings) {
    const dir = mkdtempSync(join(os.tmpdir(), "idem-bench-sqlite-"));
    const db = new Database(join(dir, "bench.db"));
    const stop = async () => {
      if (db.open) db.close();
      rmSync(dir, { recursive: true, force: true });
    };
    try {
      const backend = new SqlLock({ client: db, ttlMs: TTL_MS });
      await backend.ensureSchema();
      check(db.pragma("journal_mode", { simple: true }) === "wal", "SQLite in WAL mode");
      await seed(backend, settings);
      const sql = Object.fromEntries(
        Object.entries(PG_SQL).map(([name, text]) => [
          name,
          // Named @pN keeps PostgreSQL's parameter numbers; SQLite has no FOR UPDATE.
          text.replace(/\$(\d)/g, "@p$1").replace(" FOR UPDATE", ""),
        ]),
      ) as Record<PgName, string>;
      const st = {
        insert: db.prepare(sql.insert),
        update: db.prepare(sql.update),
        bump: db.prepare(sql.bump),
        release: db.prepare(sql.release),
        select: db.prepare(sql.select),
        reclaim: db.prepare(sql.reclaim),
        // SQLite has no FOR UPDATE: BEGIN IMMEDIATE takes the write lock up front instead.
        begin: db.prepare("BEGIN IMMEDIATE"),
        commit: db.prepare("COMMIT"),
        rollback: db.prepare("ROLLBACK"),
      };
      const fresh = (key: string) => [key, ...claimedRow(Date.now())];
      /** Positional values as the @p1, @p2, … the statements name. */
      const p = (...values: Array<string | number>) =>
        Object.fromEntries(values.map((v, k) => [`p${k + 1}`, v]));
      const select = async (key: string) =>
        (st.select.get(p(key)) as { state: string } | undefined)?.state;
      const floor: FloorStatements = {
        // SqlLock's peek, then its claim only when the peek found nothing.
        claim: selectThenInsert(select, async (key) => st.insert.run(p(...fresh(key))).changes),
        select,
        update: async (key) => st.update.run(p(key, Date.now() + TTL_MS)),
        bump: async (key) => st.bump.run(p(...fresh(key))),
        release: async (key) => st.release.run(p(...released(key))).changes,
      };
      const rowLock: RowLockStore = {
        // One connection: a second BEGIN while another worker's transaction awaits would
        // nest, so transactions queue, as they would behind SQLite's write lock.
        transaction(fn) {
          const run = queue.then(() => sqliteTransaction(fn));
          queue = run.catch(() => {});
          return run;
        },
        complete: async (key) => st.update.run(p(key, Date.now() + TTL_MS)),
      };
      let queue: Promise<unknown> = Promise.resolve();
      const sqliteTransaction = async <T>(
        fn: (tx: RowLockTx) => Promise<T | typeof RETRY>,
      ): Promise<T> => {
        for (;;) {
          st.begin.run();
          try {
            const result = await fn({
              select: async (key) => st.select.get(p(key)) as RowState | undefined,
              insert: async (key, now) => st.insert.run(p(key, ...claimedRow(now))).changes === 1,
              reclaim: async (key, now) => {
                st.reclaim.run(p(key, ...claimedRow(now)));
              },
            });
            (result === RETRY ? st.rollback : st.commit).run();
            if (result !== RETRY) return result;
          } catch (error) {
            if (db.inTransaction) st.rollback.run();
            throw error;
          }
        }
      };
      const sqliteVersion = (db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v;
      const contenders = [
        oursContender("ours", backend, settings, "floor"),
        sqlFloor("floor", settings, floor),
        rowLockContender("row-lock", settings, rowLock),
      ];
      return {
        versions: `SQLite ${sqliteVersion}; better-sqlite3 ${version("better-sqlite3")}; one connection, WAL file in a temp dir`,
        floorNote:
          "a SELECT of the record per claim (SqlLock's peek), + INSERT … ON CONFLICT DO NOTHING when no row was found, + one UPDATE for a first delivery; a mutex cycle is a SELECT + an upsert + an UPDATE that releases (fence + 1, lease and expiry rewritten); prepared once",
        open: async () => ({ contenders, close: async () => {} }),
        stop,
      };
    } catch (error) {
      await stop();
      throw error;
    }
  },
};
