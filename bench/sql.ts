/**
 * SqlLock against real servers: lock() cycles per second and their latency, beside a floor
 * (the fewest statements any SQL idempotency store can get away with) and a row-lock design
 * (BEGIN; SELECT … FOR UPDATE; INSERT or UPDATE; COMMIT, then a complete UPDATE).
 *
 *   node --import tsx --import ./scripts/text-loader.mjs bench/sql.ts [--quick] [--write]
 *
 * Paths: first (a fresh key: claim → empty body → complete), dup (a key already done, spread
 * over 1,000 done keys), held (every claim in flight on one key held by someone else).
 * PostgreSQL and MariaDB run with 1, 16 and 64 in flight over a pool of that size; SQLite is
 * one better-sqlite3 connection on a WAL file. Each measurement warms up, then runs for a
 * fixed time. `--write` rewrites the "## SQL" section of BENCHMARKS.md.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Duplicate, InProgress, lock } from "gcp-pubsub-idempotency";
import { SqlLock } from "gcp-pubsub-idempotency/sql";
import mysql from "mysql2/promise";
import pg from "pg";

const quick = process.argv.includes("--quick");
const write = process.argv.includes("--write");
const SECONDS = quick ? 0.3 : 2;
const WARMUP_SECONDS = quick ? 0.1 : 0.5;
const CONCURRENCY = [1, 16, 64];
const LEASE_MS = 60_000;
const TTL_MS = 86_400_000;
const DUP_KEYS = 1000;
const DAY = 86_400_000;
const runId = `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
const dbName = `idem_bench_${runId}`;

type Path = "first" | "dup" | "held";
const PATHS: Path[] = ["first", "dup", "held"];
type Impl = "ours" | "floor" | "row-lock";
const IMPLS: Impl[] = ["ours", "floor", "row-lock"];
type Op = (i: number) => Promise<unknown>;
/** One sequence for the whole run, so a warm-up and its measurement never share a key. */
let counter = 0;
type Ops = Record<Impl, Record<Path, Op>>;

interface Result {
  rate: number;
  p50: number;
  p99: number;
}

// ---------------------------------------------------------------- measuring

async function runFor(seconds: number, inFlight: number, op: Op, latencies?: number[]) {
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  let done = 0;
  const worker = async () => {
    for (;;) {
      const start = process.hrtime.bigint();
      if (start >= end) return;
      await op(counter++);
      done++;
      latencies?.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { done, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
}

async function measure(inFlight: number, op: Op): Promise<Result> {
  await runFor(WARMUP_SECONDS, inFlight, op);
  const latencies: number[] = [];
  const { done, seconds } = await runFor(SECONDS, inFlight, op, latencies);
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { rate: done / seconds, p50: at(0.5), p99: at(0.99) };
}

// ---------------------------------------------------------------- lock() over SqlLock

const body = () => undefined;

function oursOps(backend: SqlLock, prefix: string): Record<Path, Op> {
  const options = { backend, leaseMs: LEASE_MS };
  return {
    first: (i) => lock(`${prefix}:f:${i}`, options, body),
    dup: (i) =>
      lock(`dup:${i % DUP_KEYS}`, options, body).then(
        () => {
          throw new Error("a done key ran its body");
        },
        (error: unknown) => {
          if (!(error instanceof Duplicate)) throw error;
        },
      ),
    held: () =>
      lock("held", options, body).then(
        () => {
          throw new Error("a held key ran its body");
        },
        (error: unknown) => {
          if (!(error instanceof InProgress)) throw error;
        },
      ),
  };
}

/** Done keys dup:0…999 and the held key "held", in a table of SqlLock's shape. */
function seedRows(now: number): Array<[string, string, number, number, number, string]> {
  const rows: Array<[string, string, number, number, number, string]> = [];
  for (let i = 0; i < DUP_KEYS; i++) rows.push([`dup:${i}`, "done", 1, 0, now + DAY, "seed"]);
  rows.push(["held", "claimed", 1, now + DAY, now + 2 * DAY, "seed"]);
  return rows;
}

function expect(ok: boolean, what: string): void {
  if (!ok) throw new Error(`bench sanity check failed: ${what}`);
}

// ---------------------------------------------------------------- PostgreSQL

const pgAdminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
let pgAdmin: pg.Client | undefined;
let pgCreated = false;

async function pgSetup(): Promise<{ url: string; version: string }> {
  pgAdmin = new pg.Client({ connectionString: pgAdminUrl, connectionTimeoutMillis: 3000 });
  await pgAdmin.connect();
  await pgAdmin.query(`CREATE DATABASE ${dbName}`);
  pgCreated = true;
  const url = new URL(pgAdminUrl);
  url.pathname = `/${dbName}`;
  const version = ((await pgAdmin.query("select version() AS v")).rows[0] as { v: string }).v;
  const setup = new pg.Pool({ connectionString: url.toString(), max: 1 });
  for (const table of ["ours", "floor", "rowlock"]) {
    await new SqlLock({ client: setup, table: `t_${table}` }).ensureSchema();
    const now = Date.now();
    for (const r of seedRows(now)) {
      await setup.query(`INSERT INTO t_${table} VALUES ($1, $2, $3, $4, $5, $6)`, r);
    }
  }
  await setup.end();
  return { url: url.toString(), version };
}

async function pgDrop(): Promise<void> {
  if (pgAdmin === undefined) return;
  if (pgCreated) await pgAdmin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  pgCreated = false;
  await pgAdmin.end();
  pgAdmin = undefined;
}

const PG = {
  floorInsert: {
    name: "bench_floor_insert",
    text: `INSERT INTO t_floor ("key", state, fencing_id, lease_expires_at, expires_at, token)
      VALUES ($1, 'claimed', 1, $2, $3, $4) ON CONFLICT ("key") DO NOTHING`,
  },
  floorUpdate: {
    name: "bench_floor_update",
    text: `UPDATE t_floor SET state = 'done', expires_at = $2 WHERE "key" = $1 AND fencing_id = $3`,
  },
  begin: { name: "bench_begin", text: "BEGIN" },
  commit: { name: "bench_commit", text: "COMMIT" },
  rollback: { name: "bench_rollback", text: "ROLLBACK" },
  rlSelect: {
    name: "bench_rl_select",
    text: `SELECT state, fencing_id, lease_expires_at, expires_at FROM t_rowlock
      WHERE "key" = $1 FOR UPDATE`,
  },
  rlInsert: {
    name: "bench_rl_insert",
    text: `INSERT INTO t_rowlock ("key", state, fencing_id, lease_expires_at, expires_at, token)
      VALUES ($1, 'claimed', 1, $2, $3, $4) ON CONFLICT ("key") DO NOTHING`,
  },
  rlReclaim: {
    name: "bench_rl_reclaim",
    text: `UPDATE t_rowlock SET state = 'claimed', fencing_id = fencing_id + 1,
      lease_expires_at = $2, expires_at = $3, token = $4 WHERE "key" = $1`,
  },
  rlComplete: {
    name: "bench_rl_complete",
    text: `UPDATE t_rowlock SET state = 'done', expires_at = $2 WHERE "key" = $1 AND fencing_id = $3`,
  },
};
type PgStatement = { name: string; text: string };
const q = (db: pg.Pool | pg.PoolClient, s: PgStatement, values: unknown[] = []) =>
  db.query({ name: s.name, text: s.text, values });

type Outcome = { status: "won"; fence: number } | { status: "done" } | { status: "held" };

/** The row-lock design's claim, in one transaction on one connection. */
async function pgRowLockClaim(pool: pg.Pool, key: string): Promise<Outcome> {
  for (;;) {
    const client = await pool.connect();
    try {
      const now = Date.now();
      const values = [key, now + LEASE_MS, now + LEASE_MS + TTL_MS, "t"];
      await q(client, PG.begin);
      const found = (await q(client, PG.rlSelect, [key])).rows[0] as
        | { state: string; fencing_id: string; lease_expires_at: string; expires_at: string }
        | undefined;
      if (found === undefined) {
        if ((await q(client, PG.rlInsert, values)).rowCount === 0) {
          await q(client, PG.rollback); // someone inserted it first: look again
          continue;
        }
        await q(client, PG.commit);
        return { status: "won", fence: 1 };
      }
      const until = Number(found.state === "done" ? found.expires_at : found.lease_expires_at);
      if (until > now) {
        await q(client, PG.commit);
        return { status: found.state === "done" ? "done" : "held" };
      }
      await q(client, PG.rlReclaim, values);
      await q(client, PG.commit);
      return { status: "won", fence: Number(found.fencing_id) + 1 };
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
}

function pgOps(pool: pg.Pool, prefix: string): Ops {
  const backend = new SqlLock({ client: pool, table: "t_ours", ttlMs: TTL_MS });
  const floorInsert = (key: string) => {
    const now = Date.now();
    return q(pool, PG.floorInsert, [key, now + LEASE_MS, now + LEASE_MS + TTL_MS, "t"]);
  };
  return {
    ours: oursOps(backend, prefix),
    floor: {
      first: async (i) => {
        const key = `${prefix}:f:${i}`;
        expect((await floorInsert(key)).rowCount === 1, "floor insert of a fresh key");
        await q(pool, PG.floorUpdate, [key, Date.now() + TTL_MS, 1]);
      },
      dup: async (i) => expect((await floorInsert(`dup:${i % DUP_KEYS}`)).rowCount === 0, "dup"),
      held: async () => expect((await floorInsert("held")).rowCount === 0, "held"),
    },
    "row-lock": {
      first: async (i) => {
        const key = `${prefix}:f:${i}`;
        const out = await pgRowLockClaim(pool, key);
        expect(out.status === "won", "row-lock claim of a fresh key");
        await q(pool, PG.rlComplete, [key, Date.now() + TTL_MS, 1]);
      },
      dup: async (i) =>
        expect((await pgRowLockClaim(pool, `dup:${i % DUP_KEYS}`)).status === "done", "dup"),
      held: async () => expect((await pgRowLockClaim(pool, "held")).status === "held", "held"),
    },
  };
}

// ---------------------------------------------------------------- MariaDB / MySQL

const myAdminUrl = process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/";
let myAdmin: mysql.Connection | undefined;
let myCreated = false;

async function mySetup(): Promise<string> {
  myAdmin = await mysql.createConnection({ uri: myAdminUrl, connectTimeout: 3000 });
  await myAdmin.query(`CREATE DATABASE ${dbName}`);
  myCreated = true;
  const [rows] = await myAdmin.query("select version() AS v");
  const version = (rows as Array<{ v: string }>)[0]?.v ?? "?";
  const setup = myPool(1);
  for (const table of ["ours", "floor", "rowlock"]) {
    await new SqlLock({ client: setup, table: `t_${table}` }).ensureSchema();
    const now = Date.now();
    await setup.query(`INSERT INTO t_${table} VALUES ?`, [seedRows(now)]);
  }
  await setup.end();
  return version;
}

function myPool(limit: number): mysql.Pool {
  return mysql.createPool({
    uri: myAdminUrl,
    database: dbName,
    connectionLimit: limit,
    supportBigNumbers: true,
  });
}

async function myDrop(): Promise<void> {
  if (myAdmin === undefined) return;
  if (myCreated) await myAdmin.query(`DROP DATABASE IF EXISTS ${dbName}`);
  myCreated = false;
  await myAdmin.end();
  myAdmin = undefined;
}

const MY = {
  floorInsert:
    "INSERT IGNORE INTO t_floor (`key`, state, fencing_id, lease_expires_at, expires_at, token) VALUES (?, 'claimed', 1, ?, ?, ?)",
  floorUpdate:
    "UPDATE t_floor SET state = 'done', expires_at = ? WHERE `key` = ? AND fencing_id = ?",
  rlSelect:
    "SELECT state, fencing_id, lease_expires_at, expires_at FROM t_rowlock WHERE `key` = ? FOR UPDATE",
  rlInsert:
    "INSERT IGNORE INTO t_rowlock (`key`, state, fencing_id, lease_expires_at, expires_at, token) VALUES (?, 'claimed', 1, ?, ?, ?)",
  rlReclaim:
    "UPDATE t_rowlock SET state = 'claimed', fencing_id = fencing_id + 1, lease_expires_at = ?, expires_at = ?, token = ? WHERE `key` = ?",
  rlComplete:
    "UPDATE t_rowlock SET state = 'done', expires_at = ? WHERE `key` = ? AND fencing_id = ?",
};
const affected = (result: unknown) => (result as { affectedRows: number }).affectedRows;

async function myRowLockClaim(pool: mysql.Pool, key: string): Promise<Outcome> {
  for (;;) {
    const conn = await pool.getConnection();
    try {
      const now = Date.now();
      await conn.query("START TRANSACTION");
      const [rows] = await conn.execute(MY.rlSelect, [key]);
      const found = (rows as Array<Record<string, string | number>>)[0];
      if (found === undefined) {
        const [r] = await conn.execute(MY.rlInsert, [
          key,
          now + LEASE_MS,
          now + LEASE_MS + TTL_MS,
          "t",
        ]);
        if (affected(r) === 0) {
          await conn.query("ROLLBACK");
          continue;
        }
        await conn.query("COMMIT");
        return { status: "won", fence: 1 };
      }
      const until = Number(found.state === "done" ? found.expires_at : found.lease_expires_at);
      if (until > now) {
        await conn.query("COMMIT");
        return { status: found.state === "done" ? "done" : "held" };
      }
      await conn.execute(MY.rlReclaim, [now + LEASE_MS, now + LEASE_MS + TTL_MS, "t", key]);
      await conn.query("COMMIT");
      return { status: "won", fence: Number(found.fencing_id) + 1 };
    } catch (error) {
      await conn.query("ROLLBACK").catch(() => {});
      // InnoDB gap locks on an absent key deadlock two inserters now and then: retry.
      if ((error as { errno?: number }).errno === 1213) continue;
      throw error;
    } finally {
      conn.release();
    }
  }
}

function myOps(pool: mysql.Pool, prefix: string): Ops {
  const backend = new SqlLock({ client: pool, table: "t_ours", ttlMs: TTL_MS });
  const floorInsert = async (key: string) => {
    const now = Date.now();
    const [r] = await pool.execute(MY.floorInsert, [
      key,
      now + LEASE_MS,
      now + LEASE_MS + TTL_MS,
      "t",
    ]);
    return affected(r);
  };
  return {
    ours: oursOps(backend, prefix),
    floor: {
      first: async (i) => {
        const key = `${prefix}:f:${i}`;
        expect((await floorInsert(key)) === 1, "floor insert of a fresh key");
        await pool.execute(MY.floorUpdate, [Date.now() + TTL_MS, key, 1]);
      },
      dup: async (i) => expect((await floorInsert(`dup:${i % DUP_KEYS}`)) === 0, "dup"),
      held: async () => expect((await floorInsert("held")) === 0, "held"),
    },
    "row-lock": {
      first: async (i) => {
        const key = `${prefix}:f:${i}`;
        expect((await myRowLockClaim(pool, key)).status === "won", "row-lock fresh key");
        await pool.execute(MY.rlComplete, [Date.now() + TTL_MS, key, 1]);
      },
      dup: async (i) =>
        expect((await myRowLockClaim(pool, `dup:${i % DUP_KEYS}`)).status === "done", "dup"),
      held: async () => expect((await myRowLockClaim(pool, "held")).status === "held", "held"),
    },
  };
}

// ---------------------------------------------------------------- SQLite

let sqliteDir: string | undefined;
let sqliteDb: Database.Database | undefined;

function sqliteDrop(): void {
  if (sqliteDb?.open) sqliteDb.close();
  if (sqliteDir !== undefined) rmSync(sqliteDir, { recursive: true, force: true });
  sqliteDb = undefined;
  sqliteDir = undefined;
}

async function sqliteSetup(): Promise<{ ops: Ops; version: string }> {
  sqliteDir = mkdtempSync(join(os.tmpdir(), "idem-bench-sqlite-"));
  const db = new Database(join(sqliteDir, "bench.db"));
  sqliteDb = db;
  for (const table of ["ours", "floor", "rowlock"]) {
    await new SqlLock({ client: db, table: `t_${table}` }).ensureSchema();
    const insert = db.prepare(`INSERT INTO t_${table} VALUES (?, ?, ?, ?, ?, ?)`);
    const now = Date.now();
    db.transaction(() => {
      for (const r of seedRows(now)) insert.run(...r);
    })();
  }
  expect(db.pragma("journal_mode", { simple: true }) === "wal", "SQLite in WAL mode");
  const version = (db.prepare("select sqlite_version() AS v").get() as { v: string }).v;
  const backend = new SqlLock({ client: db, table: "t_ours", ttlMs: TTL_MS });
  const floorInsert = db.prepare(
    `INSERT INTO t_floor ("key", state, fencing_id, lease_expires_at, expires_at, token)
     VALUES (?, 'claimed', 1, ?, ?, ?) ON CONFLICT ("key") DO NOTHING`,
  );
  const floorUpdate = db.prepare(
    `UPDATE t_floor SET state = 'done', expires_at = ? WHERE "key" = ? AND fencing_id = ?`,
  );
  const begin = db.prepare("BEGIN IMMEDIATE");
  const commit = db.prepare("COMMIT");
  const rlSelect = db.prepare(
    `SELECT state, fencing_id, lease_expires_at, expires_at FROM t_rowlock WHERE "key" = ?`,
  );
  const rlInsert = db.prepare(
    `INSERT INTO t_rowlock ("key", state, fencing_id, lease_expires_at, expires_at, token)
     VALUES (?, 'claimed', 1, ?, ?, ?)`,
  );
  const rlReclaim = db.prepare(
    `UPDATE t_rowlock SET state = 'claimed', fencing_id = fencing_id + 1,
     lease_expires_at = ?, expires_at = ?, token = ? WHERE "key" = ?`,
  );
  const rlComplete = db.prepare(
    `UPDATE t_rowlock SET state = 'done', expires_at = ? WHERE "key" = ? AND fencing_id = ?`,
  );
  /** SQLite has no FOR UPDATE: BEGIN IMMEDIATE takes the write lock up front instead. */
  const rowLockClaim = (key: string): Outcome => {
    const now = Date.now();
    begin.run();
    try {
      const found = rlSelect.get(key) as
        | { state: string; fencing_id: number; lease_expires_at: number; expires_at: number }
        | undefined;
      let out: Outcome;
      if (found === undefined) {
        rlInsert.run(key, now + LEASE_MS, now + LEASE_MS + TTL_MS, "t");
        out = { status: "won", fence: 1 };
      } else if ((found.state === "done" ? found.expires_at : found.lease_expires_at) > now) {
        out = { status: found.state === "done" ? "done" : "held" };
      } else {
        rlReclaim.run(now + LEASE_MS, now + LEASE_MS + TTL_MS, "t", key);
        out = { status: "won", fence: found.fencing_id + 1 };
      }
      commit.run();
      return out;
    } catch (error) {
      if (db.inTransaction) db.exec("ROLLBACK");
      throw error;
    }
  };
  const fInsert = (key: string) => {
    const now = Date.now();
    return floorInsert.run(key, now + LEASE_MS, now + LEASE_MS + TTL_MS, "t").changes;
  };
  const ops: Ops = {
    ours: oursOps(backend, "sqlite"),
    floor: {
      first: async (i) => {
        const key = `sqlite:f:${i}`;
        expect(fInsert(key) === 1, "floor insert of a fresh key");
        floorUpdate.run(Date.now() + TTL_MS, key, 1);
      },
      dup: async (i) => expect(fInsert(`dup:${i % DUP_KEYS}`) === 0, "dup"),
      held: async () => expect(fInsert("held") === 0, "held"),
    },
    "row-lock": {
      first: async (i) => {
        const key = `sqlite:f:${i}`;
        expect(rowLockClaim(key).status === "won", "row-lock fresh key");
        rlComplete.run(Date.now() + TTL_MS, key, 1);
      },
      dup: async (i) => expect(rowLockClaim(`dup:${i % DUP_KEYS}`).status === "done", "dup"),
      held: async () => expect(rowLockClaim("held").status === "held", "held"),
    },
  };
  return { ops, version };
}

// ---------------------------------------------------------------- reporting

type Table = Map<string, Result>; // `${impl}|${path}|${c}`
const cell = (impl: Impl, path: Path, c: number) => `${impl}|${path}|${c}`;
const out: string[] = [];
const say = (line = "") => {
  console.log(line);
  out.push(line);
};
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => n.toFixed(2);

async function runDialect(
  title: string,
  concurrencies: number[],
  opsFor: (c: number) => Promise<{ ops: Ops; close: () => Promise<void> }>,
): Promise<Table> {
  const table: Table = new Map();
  for (const c of concurrencies) {
    const { ops, close } = await opsFor(c);
    try {
      for (const path of PATHS) {
        for (const impl of IMPLS) {
          table.set(cell(impl, path, c), await measure(c, ops[impl][path]));
          process.stderr.write(".");
        }
      }
    } finally {
      await close();
    }
  }
  process.stderr.write("\n");
  say(`### ${title}`);
  say();
  say("| path | in flight | impl | ops/s | p50 ms | p99 ms |");
  say("|---|--:|---|--:|--:|--:|");
  for (const path of PATHS) {
    for (const c of concurrencies) {
      for (const impl of IMPLS) {
        const r = table.get(cell(impl, path, c));
        if (r) say(`| ${path} | ${c} | ${impl} | ${fmt(r.rate)} | ${ms(r.p50)} | ${ms(r.p99)} |`);
      }
    }
  }
  say();
  return table;
}

function ratios(title: string, table: Table, concurrencies: number[], targets: boolean): void {
  say(
    `Ratios, ${title} (ops/s of ours ÷ ops/s of the other)${targets ? ", against the targets" : ""}:`,
  );
  say();
  say(
    targets
      ? "| path | in flight | ours ÷ row-lock | target ≥ 3 | ours ÷ floor | target ≥ 0.83 |"
      : "| path | in flight | ours ÷ row-lock | ours ÷ floor |",
  );
  say(targets ? "|---|--:|--:|---|--:|---|" : "|---|--:|--:|--:|");
  for (const path of PATHS) {
    for (const c of concurrencies) {
      const ours = table.get(cell("ours", path, c))?.rate ?? Number.NaN;
      const rl = ours / (table.get(cell("row-lock", path, c))?.rate ?? Number.NaN);
      const fl = ours / (table.get(cell("floor", path, c))?.rate ?? Number.NaN);
      if (!targets) {
        say(`| ${path} | ${c} | ${rl.toFixed(2)} | ${fl.toFixed(2)} |`);
        continue;
      }
      const rlMark = c >= 16 ? (rl >= 3 ? "met" : "**not met**") : "—";
      const flMark = fl >= 0.83 ? "met" : "**not met**";
      say(`| ${path} | ${c} | ${rl.toFixed(2)} | ${rlMark} | ${fl.toFixed(2)} | ${flMark} |`);
    }
  }
  say();
}

function writeBenchmarks(): void {
  const file = "BENCHMARKS.md";
  const section = ["## SQL", "", ...out].join("\n").trimEnd();
  let text = existsSync(file) ? readFileSync(file, "utf8") : "# Benchmarks\n";
  const start = text.search(/^## SQL\s*$/m);
  if (start === -1) {
    text = `${text.trimEnd()}\n\n${section}\n`;
  } else {
    const rest = text.slice(start + 6);
    const next = rest.search(/^## /m);
    const tail = next === -1 ? "" : `\n\n${rest.slice(next)}`;
    text = `${text.slice(0, start)}${section}${tail}`.trimEnd().concat("\n");
  }
  writeFileSync(file, text);
  console.log(`wrote the "## SQL" section of ${file}`);
}

// ---------------------------------------------------------------- main

let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    sqliteDrop();
    await Promise.allSettled([pgDrop(), myDrop()]);
  })();
  return cleaning;
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: dropping ${dbName}`);
    void cleanup().finally(() => process.exit(130));
  });
}

try {
  const cpu = os.cpus()[0]?.model ?? "unknown CPU";
  const pgInfo = await pgSetup();
  const myVersion = await mySetup();
  const { ops: sqliteOps, version: sqliteVersion } = await sqliteSetup();
  say(
    `Run ${new Date().toISOString()}${quick ? " (--quick)" : ""}: ${cpu}, ${os.cpus().length} cores,`,
  );
  say(`Node ${process.version}, ${os.type()} ${os.release()}.`);
  say(
    `PostgreSQL: ${pgInfo.version}. MariaDB/MySQL: ${myVersion}. SQLite: ${sqliteVersion} (better-sqlite3, WAL).`,
  );
  say(
    `Each cell: ${WARMUP_SECONDS} s warm-up, then ${SECONDS} s with the given number in flight; ` +
      "servers on the same machine (127.0.0.1).",
  );
  say(
    "Paths: first = lock() on a fresh key (claim → empty body → complete); dup = a done key " +
      "(1,000 of them, round robin), lock() rejects with Duplicate; held = every call on one key " +
      "held elsewhere, lock() rejects with InProgress.",
  );
  say(
    "floor = INSERT … ON CONFLICT DO NOTHING (plus one UPDATE for a first delivery); row-lock = " +
      "BEGIN; SELECT … FOR UPDATE; INSERT or UPDATE; COMMIT (plus the complete UPDATE). " +
      "PostgreSQL: every statement named/prepared; MariaDB: mysql2 execute() (prepared).",
  );
  say();

  const pgTable = await runDialect(
    "PostgreSQL (pg Pool, max = in flight)",
    CONCURRENCY,
    async (c) => {
      const pool = new pg.Pool({ connectionString: pgInfo.url, max: Math.min(c, 64) });
      pool.on("error", () => {});
      return { ops: pgOps(pool, `pg${c}`), close: () => pool.end() };
    },
  );
  ratios("PostgreSQL", pgTable, CONCURRENCY, true);

  const myTable = await runDialect(
    "MariaDB/MySQL (mysql2/promise pool, limit = in flight)",
    CONCURRENCY,
    async (c) => {
      const pool = myPool(Math.min(c, 64));
      return { ops: myOps(pool, `my${c}`), close: () => pool.end() };
    },
  );
  ratios("MariaDB/MySQL", myTable, CONCURRENCY, false);

  const sqliteTable = await runDialect(
    "SQLite (one better-sqlite3 connection, file in a temp dir, WAL)",
    CONCURRENCY,
    async () => ({ ops: sqliteOps, close: async () => {} }),
  );
  ratios("SQLite", sqliteTable, CONCURRENCY, false);
  if (write) writeBenchmarks();
} finally {
  await cleanup();
}
