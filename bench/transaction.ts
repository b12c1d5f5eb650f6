/**
 * lockInTransaction against lock() plus the same business write in a transaction of its own,
 * on each SQL dialect, same store, same run, the two interleaved round by round:
 *
 *   in-transaction — claim; BEGIN; INSERT the business row; the fenced complete; COMMIT
 *   lock + own tx  — claim; BEGIN; INSERT the business row; COMMIT; complete
 *
 * The same statements, one commit fewer for lockInTransaction (the complete rides in the
 * business transaction). The business table has no unique constraint, as the mode allows.
 *
 * Run by the suite (bench/main.ts): `npm run bench -- --only transaction` (or its alias
 * `npm run bench:transaction`); the full run (no --only, --out, --quick or --smoke) rewrites
 * docs/benchmarks/transaction.md, a run with --out writes it next to that file, any other
 * prints it; `--smoke` runs it at a tiny size.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { lock, lockInTransaction } from "gcp-pubsub-idempotency";
import { SqlLock } from "gcp-pubsub-idempotency/sql";
import mysql from "mysql2/promise";
import pg from "pg";
import {
  fmtMs,
  fmtRate,
  interleaved,
  loadAverage,
  type Op,
  pairedRatios,
  progress,
  type Result,
  type Settings,
  type Spread,
  spread,
} from "./runner.js";
import { LEASE_MS, RUN_ID, TTL_MS, version } from "./suite.js";

const ORDERS = "bench_orders";
const CONCURRENCY = [1, 16, 64] as const;

interface Dialect {
  id: string;
  title: string;
  versions: string;
  /** The two contenders at one concurrency (pools sized to it), and how to let them go. */
  open(concurrency: number): Promise<{ inTx: Op; ownTx: Op; close(): Promise<void> }>;
  stop(): Promise<void>;
}

const options = <B>(backend: B) => ({ backend, leaseMs: LEASE_MS });

async function postgres(): Promise<Dialect> {
  const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const database = `idem_bench_tx_${RUN_ID}`;
  await admin.query(`CREATE DATABASE ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const setup = new pg.Pool({ connectionString: url.toString(), max: 2 });
  setup.on("error", () => {});
  await new SqlLock({ client: setup, ttlMs: TTL_MS }).ensureSchema();
  await setup.query(`CREATE TABLE ${ORDERS} (id bigserial, msg text NOT NULL, body text)`);
  const serverVersion = (await setup.query("SHOW server_version")).rows[0].server_version;
  await setup.end();
  const insert = {
    name: "bench_order",
    text: `INSERT INTO ${ORDERS} (msg, body) VALUES ($1, $2)`,
  };
  return {
    id: "postgres",
    title: "PostgreSQL",
    versions: `PostgreSQL ${serverVersion}; pg ${version("pg")}; a pg.Pool with max = in flight`,
    async open(concurrency) {
      const pool = new pg.Pool({ connectionString: url.toString(), max: concurrency });
      // The database is dropped WITH (FORCE) at the end: an idle client's error is expected.
      pool.on("error", () => {});
      const backend = new SqlLock({ client: pool, ttlMs: TTL_MS });
      return {
        inTx: (i) =>
          lockInTransaction(`tx:${i}`, options(backend), async (tx) => {
            await tx.query({ ...insert, values: [`tx:${i}`, "order"] });
          }),
        ownTx: (i) =>
          lock(`own:${i}`, options(backend), async () => {
            const client = await pool.connect();
            try {
              await client.query("BEGIN");
              await client.query({ ...insert, values: [`own:${i}`, "order"] });
              await client.query("COMMIT");
              client.release();
            } catch (error) {
              await client.query("ROLLBACK").catch(() => {});
              client.release(true);
              throw error;
            }
          }),
        close: () => pool.end(),
      };
    },
    async stop() {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    },
  };
}

async function mariadb(): Promise<Dialect> {
  const adminUrl = process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/";
  const admin = await mysql.createConnection({ uri: adminUrl });
  const database = `idem_bench_tx_${RUN_ID}`;
  await admin.query(`CREATE DATABASE ${database}`);
  const poolOf = (limit: number) =>
    mysql.createPool({ uri: adminUrl, database, connectionLimit: limit, supportBigNumbers: true });
  const setup = poolOf(2);
  await new SqlLock({ client: setup, ttlMs: TTL_MS }).ensureSchema();
  await setup.query(
    `CREATE TABLE ${ORDERS} (id BIGINT AUTO_INCREMENT PRIMARY KEY, msg VARCHAR(64) NOT NULL, body TEXT)`,
  );
  const [rows] = await setup.query("SELECT version() AS v");
  await setup.end();
  const insert = `INSERT INTO ${ORDERS} (msg, body) VALUES (?, ?)`;
  return {
    id: "mariadb",
    title: "MariaDB",
    versions: `MariaDB ${(rows as Array<{ v: string }>)[0]?.v}; mysql2 ${version("mysql2")}; a pool with connectionLimit = in flight`,
    async open(concurrency) {
      const pool = poolOf(concurrency);
      const backend = new SqlLock({ client: pool, ttlMs: TTL_MS });
      return {
        inTx: (i) =>
          lockInTransaction(`tx:${i}`, options(backend), async (tx) => {
            await tx.execute(insert, [`tx:${i}`, "order"]);
          }),
        ownTx: (i) =>
          lock(`own:${i}`, options(backend), async () => {
            const connection = await pool.getConnection();
            try {
              await connection.query("START TRANSACTION");
              await connection.execute(insert, [`own:${i}`, "order"]);
              await connection.query("COMMIT");
              connection.release();
            } catch (error) {
              await connection.query("ROLLBACK").catch(() => {});
              connection.destroy();
              throw error;
            }
          }),
        close: () => pool.end(),
      };
    },
    async stop() {
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
      await admin.end();
    },
  };
}

async function sqlite(): Promise<Dialect> {
  const dir = mkdtempSync(join(os.tmpdir(), "idem-bench-tx-"));
  const db = new Database(join(dir, "bench.db"));
  const backend = new SqlLock({ client: db, ttlMs: TTL_MS });
  await backend.ensureSchema();
  db.exec(`CREATE TABLE ${ORDERS} (id INTEGER PRIMARY KEY, msg TEXT NOT NULL, body TEXT)`);
  const insert = db.prepare(`INSERT INTO ${ORDERS} (msg, body) VALUES (?, ?)`);
  const begin = db.prepare("BEGIN IMMEDIATE");
  const commit = db.prepare("COMMIT");
  const sqliteVersion = (db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v;
  return {
    id: "sqlite",
    title: "SQLite",
    versions: `SQLite ${sqliteVersion}; better-sqlite3 ${version("better-sqlite3")}; one connection, WAL`,
    async open() {
      return {
        inTx: (i) =>
          lockInTransaction(`tx:${i}`, options(backend), async (tx) => {
            // tx is `db` itself: the statement prepared on it once runs inside the transaction.
            if (tx !== db) throw new Error("bench: tx is not the connection");
            insert.run(`tx:${i}`, "order");
          }),
        // Synchronous inside: nothing else can run on the connection between BEGIN and COMMIT.
        ownTx: (i) =>
          lock(`own:${i}`, options(backend), async () => {
            begin.run();
            try {
              insert.run(`own:${i}`, "order");
              commit.run();
            } catch (error) {
              if (db.inTransaction) db.exec("ROLLBACK");
              throw error;
            }
          }),
        close: async () => {},
      };
    },
    async stop() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const DIALECTS: Record<string, () => Promise<Dialect>> = { postgres, mariadb, sqlite };

/** What {@link transactionBench} measures: dialects, in-flight counts; the rest is `settings`. */
export interface TransactionBenchOptions {
  /** The command that ran it, for the report's header. */
  readonly command: string;
  /** The run's provenance line (bench/provenance.ts): the commit and whether the tree was dirty. */
  readonly provenance?: string;
  /** Dialect ids (postgres, mariadb, sqlite); default all. */
  readonly only?: readonly string[];
  /** Default 1, 16, 64 (1 and 16 at smoke size). */
  readonly inFlight?: readonly number[];
}

/** Every dialect, interleaved pairs at each in-flight count; resolves to the Markdown report. */
/** lockInTransaction ÷ lock() + its own transaction, round by round, for one dialect and concurrency. */
export interface TransactionRatio {
  dialect: string;
  inFlight: number;
  ratio: Spread;
}

export async function transactionBench(
  settings: Settings,
  options: TransactionBenchOptions,
): Promise<{ markdown: string; failed: boolean; ratios: TransactionRatio[] }> {
  const only = options.only ?? Object.keys(DIALECTS);
  for (const name of only) {
    if (!(name in DIALECTS)) throw new Error(`transaction bench: unknown dialect ${name}`);
  }
  const lines: string[] = [
    "# lockInTransaction vs lock() + its own transaction",
    "",
    `Written by \`${options.command}\`.`,
    "",
    ...(options.provenance === undefined ? [] : [options.provenance, ""]),
    `- Date: ${new Date().toISOString()} (${settings.size} size); Node ${process.version}; ${os.cpus().length} cores; servers on 127.0.0.1`,
    `- Load average at start: ${loadAverage()}. Other processes share these cores: compare within a run.`,
    `- Each cell: ${settings.rounds} round(s), the two interleaved, ${settings.warmupMs} ms warm-up then ${settings.roundMs} ms timed each; every operation a fresh key and one business row (no unique constraint).`,
    "- **in-transaction** = `lockInTransaction`: claim; BEGIN; INSERT; the fenced complete; COMMIT. **lock + own tx** = `lock()` whose body does BEGIN; INSERT; COMMIT, then the complete: the same statements, one commit more.",
    "",
    "| dialect | in flight | in-transaction ops/s | p50 ms | p99 ms | lock + own tx ops/s | p50 ms | p99 ms | ratio |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
  ];
  const concurrency = options.inFlight ?? (settings.size === "smoke" ? [1, 16] : CONCURRENCY);
  let failed = false;
  const ratios: TransactionRatio[] = [];
  for (const id of only) {
    let dialect: Dialect | undefined;
    try {
      dialect = await DIALECTS[id]!();
      progress(`${dialect.title}: ${dialect.versions}`);
      for (const c of concurrency) {
        const session = await dialect.open(c);
        try {
          const pair: Array<readonly [string, Op]> = [
            ["in-transaction", session.inTx],
            ["lock + own tx", session.ownTx],
          ];
          // BENCH_REVERSED=1 times the other one first in each round, to see any order bias.
          if (process.env.BENCH_REVERSED === "1") pair.reverse();
          const results: Map<string, Result> = await interleaved(settings, pair, c);
          const a = results.get("in-transaction")!;
          const b = results.get("lock + own tx")!;
          const ratio = a.opsPerSec / b.opsPerSec;
          const rounds = spread(pairedRatios(a.rounds, b.rounds));
          if (rounds) ratios.push({ dialect: dialect.title, inFlight: c, ratio: rounds });
          progress(
            `  ${id} ×${c}: in-transaction ${fmtRate(a.opsPerSec)}/s, lock + own tx ${fmtRate(b.opsPerSec)}/s: ${ratio.toFixed(2)}×`,
          );
          lines.push(
            `| ${dialect.title} | ${c} | ${fmtRate(a.opsPerSec)} | ${fmtMs(a.p50)} | ${fmtMs(a.p99)} | ${fmtRate(b.opsPerSec)} | ${fmtMs(b.p50)} | ${fmtMs(b.p99)} | ${ratio.toFixed(2)}× |`,
          );
        } finally {
          await session.close();
        }
      }
    } catch (error) {
      failed = true;
      progress(`  ${id} FAILED: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      await dialect?.stop();
    }
  }
  lines.push("", `Load average at the end: ${loadAverage()}.`, "");
  return { markdown: lines.join("\n"), failed, ratios };
}
