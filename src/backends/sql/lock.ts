import { randomUUID } from "node:crypto";
import { DEFAULT_TTL_MS } from "../../core/constants.js";
import { type BackendError, InvalidConfiguration } from "../../core/errors.js";
import { type RetryPolicy, withRetry } from "../../core/retry.js";
import type { lockInTransaction } from "../../core/transaction.js";
import { forceReleaseTransition, type LockRecord } from "../../core/transitions.js";
import type {
  Claim,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  PurgeOptions,
  TransactionalLockBackend,
  TransactionCompletion,
} from "../../core/types.js";
import {
  assertFencingId,
  assertPositiveMs,
  assertValidKey,
  describe,
  knownOptions,
  readOptions,
  ttlOption,
} from "../../core/validate.js";
import { hasMethods } from "../shared/has-methods.js";
import { purgeInBatches } from "../shared/purge.js";
import { callStore, callStoreWithBody } from "../shared/store-call.js";
import { type ConnectionGate, gateFor } from "./connection-gate.js";
import type { Dialect, DialectSession, OpenTransaction } from "./dialect.js";
import type { MysqlPoolConnectionLike, MysqlPoolLike, MysqlQueryable } from "./mysql/client.js";
import { mysql } from "./mysql/dialect.js";
import type { PgPoolClientLike, PgPoolLike, PgQueryable, PgResultLike } from "./postgres/client.js";
import { postgres } from "./postgres/dialect.js";
import type { SqliteDatabaseLike, SqliteStatementLike } from "./sqlite/client.js";
import { sqlite } from "./sqlite/dialect.js";
import type { SqlClient, SqlDialect } from "./types.js";

export type {
  MysqlPoolConnectionLike,
  MysqlPoolLike,
  MysqlQueryable,
  PgPoolClientLike,
  PgPoolLike,
  PgQueryable,
  PgResultLike,
  SqlClient,
  SqlDialect,
  SqliteDatabaseLike,
  SqliteStatementLike,
};

/**
 * The transaction handle {@link lockInTransaction}'s body gets from a `SqlLock` over client
 * `C`, in the driver's own type: a pg `Pool` → its `PoolClient` (inside BEGIN … COMMIT); a
 * mysql2/promise `Pool` → its `PoolConnection`; a better-sqlite3 `Database`, a pg `Client` or
 * a mysql2 `Connection` → that one connection itself.
 *
 * @example
 * ```ts
 * import Database from "better-sqlite3";
 * import mysql from "mysql2/promise";
 * import pg from "pg";
 * import type { SqlTransaction } from "gcp-pubsub-idempotency/sql";
 *
 * type OnPg = SqlTransaction<pg.Pool>; // pg.PoolClient
 * type OnMysql = SqlTransaction<mysql.Pool>; // mysql.PoolConnection
 * type OnSqlite = SqlTransaction<Database.Database>; // Database.Database
 * async function insert(tx: OnPg, id: string) {
 *   await tx.query("INSERT INTO orders (id) VALUES ($1)", [id]);
 * }
 * ```
 */
export type SqlTransaction<C> = C extends SqliteDatabaseLike
  ? C
  : C extends {
        /** A mysql2 pool checks out a connection. */
        getConnection(): Promise<infer K>;
      }
    ? K
    : C extends {
          /** Only a pg Pool has it (a Client does not). */
          readonly totalCount: number;
          /** A pg pool checks out a client. */
          connect(): Promise<infer K>;
        }
      ? // pg's Pool declares connect() twice: inference reads the callback form, last.
        unknown extends K
        ? C extends {
            /** The callback form of pg's `Pool.connect`. */
            connect(callback: (error: never, client: infer P, ...rest: never[]) => void): unknown;
          }
          ? unknown extends P
            ? PgPoolClientLike
            : NonNullable<P>
          : PgPoolClientLike
        : K
      : C;

/**
 * Options of {@link SqlLock}. The constructor throws {@link InvalidConfiguration} for a
 * client it cannot use, an unknown dialect, a bad table name or `ttlMs`.
 *
 * @example
 * ```ts
 * import mysql from "mysql2/promise";
 * import { SqlLock, type SqlLockOptions } from "gcp-pubsub-idempotency/sql";
 *
 * const options: SqlLockOptions = {
 *   client: mysql.createPool({ uri: process.env.MYSQL_URL ?? "mysql://root@127.0.0.1/app" }),
 *   table: "orders_idempotency",
 *   ttlMs: 24 * 60 * 60_000,
 * };
 * const backend = new SqlLock(options);
 * ```
 */
export interface SqlLockOptions<C extends SqlClient = SqlClient> {
  /** A pg Pool or Client, a mysql2/promise Pool, or a better-sqlite3 Database. */
  client: C;
  /** Detected from the client's shape when omitted. */
  dialect?: SqlDialect | undefined;
  /**
   * Default `idempotency_records`; PostgreSQL also takes `schema.table`, MySQL/MariaDB
   * `database.table` (the record table in another database of the server, e.g. beside your
   * own tables for {@link lockInTransaction}). Letters, digits and underscores, not starting
   * with a digit, at most 48 characters per part; each part is quoted.
   */
  table?: string | undefined;
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to `MAX_TTL_MS` (10 years);
   * default {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number | undefined;
}

const DEFAULT_TABLE = "idempotency_records";
/** Rows per purge batch: templated into each dialect's purge.sql as `{{purgeBatch}}`. */
const PURGE_BATCH = 1000;
/**
 * Claim retries of a deadlock, serialization failure or busy database: 5 attempts, pauses
 * averaging 5 to 40 ms. No time bound: a busy SQLite file waits its busy_timeout per attempt.
 */
const CLAIM_RETRY: RetryPolicy = {
  attempts: 5,
  baseDelayMs: 10,
  maxDelayMs: 80,
  maxElapsedMs: Number.POSITIVE_INFINITY,
};
/** Whole lines of `--` comments, stripped from every statement but the DDL. */
const COMMENT_LINES = /^[ \t]*--.*(\r?\n|$)/gm;
// Short enough that the derived index name stays within PostgreSQL's 63-byte identifiers.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

/** Every dialect, by name. A new dialect is a folder under sql/ and one entry here. */
const DIALECTS: Readonly<Record<SqlDialect, Dialect>> = { postgres, mysql, sqlite };
/** Detection tries the most specific client shape first: a mysql2 pool has query() too. */
const DETECTION_ORDER: readonly Dialect[] = [sqlite, mysql, postgres];

/** The options SqlLock takes; any other name is refused. */
const NAMES = ["client", "dialect", "table", "ttlMs"] as const;
const KNOWN = knownOptions(NAMES, "backend");

/**
 * A LockBackend over one SQL table: PostgreSQL (pg), MySQL/MariaDB (mysql2) or SQLite
 * (better-sqlite3). Time is the database server's clock, read inside each statement.
 * Constructing does no I/O; call `ensureSchema()` once, or apply the shipped `schema.sql`.
 *
 * Round trips: PostgreSQL one named prepared statement per verb; MySQL a read that answers a
 * live record, else one insert or fenced update (an upsert and a read more after a lost
 * race), and one statement for the other verbs; SQLite a read that answers a live record,
 * else one upsert, and one statement for the other verbs.
 *
 * Failures reject with a {@link BackendError} naming the dialect, the verb and the key; a
 * deadlock or serialization failure on claim is retried a few times first.
 *
 * {@link lockInTransaction} runs its body in a transaction of this database and completes
 * the claim in it (see {@link SqlLock.completeInTransaction}): keep the table beside yours
 * (`schema.table` on PostgreSQL, `database.table` on MySQL, your own file on SQLite).
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import { lock } from "gcp-pubsub-idempotency";
 * import { SqlLock } from "gcp-pubsub-idempotency/sql";
 *
 * const backend = new SqlLock({ client: new pg.Pool({ connectionString: process.env.DATABASE_URL }) });
 * await backend.ensureSchema(); // or apply backend.schemaSql with your migrations
 * await lock("orders:4711", { backend }, async () => {});
 * ```
 */
export class SqlLock<C extends SqlClient = SqlClient>
  implements TransactionalLockBackend<SqlTransaction<C>>
{
  /** The dialect in use, given or detected from the client. */
  readonly dialect: SqlDialect;
  /** The table of the records, as given (unquoted). */
  readonly table: string;
  /** How long a DONE key suppresses duplicates, in ms. */
  readonly ttlMs: number;
  private readonly sql: Readonly<Record<string, string>>;
  private readonly session: DialectSession;
  private readonly isTransient: (error: unknown) => boolean;
  /** On one connection: keeps statements out of an open transaction. None for a pool. */
  private readonly gate: ConnectionGate | undefined;

  /**
   * Checks every option before any I/O: a missing or unusable `client`, an unknown
   * `dialect`, a bad `table`, or a `ttlMs` that is not a whole number of ms from 1 to
   * `MAX_TTL_MS` throws {@link InvalidConfiguration} naming the option.
   */
  constructor(options: SqlLockOptions<C>) {
    const read = readOptions("SqlLock", options, false, NAMES, KNOWN);
    const client = read.client;
    if (client === null || (typeof client !== "object" && typeof client !== "function")) {
      throw new InvalidConfiguration(
        `SqlLock option client must be a pg, mysql2/promise or better-sqlite3 client, got ${describe(client)}`,
      );
    }
    const dialect = read.dialect === undefined ? detectDialect(client) : dialectNamed(read.dialect);
    this.dialect = dialect.name;
    assertClientFits(dialect, client);
    this.ttlMs = ttlOption(read.ttlMs, DEFAULT_TTL_MS);
    const table = read.table === undefined ? DEFAULT_TABLE : read.table;
    const { quoted, index } = parseTable(dialect, table);
    this.table = table as string;
    const sql: Record<string, string> = {};
    for (const [name, template] of Object.entries(dialect.templates)) {
      // The header comments document the file; a driver that keys its statement cache on the
      // text (mysql2) would hash them on every call. The DDL keeps them: users apply it.
      const text = name === "schema" ? template : template.replace(COMMENT_LINES, "");
      sql[name] = text
        .replaceAll("{{table}}", quoted)
        .replaceAll("{{index}}", index)
        .replaceAll("{{purgeBatch}}", String(PURGE_BATCH));
    }
    this.sql = sql;
    this.isTransient = (error) =>
      error !== null && typeof error === "object" && dialect.isTransient(error);
    this.session = dialect.open(client as SqlClient, (name) => this.text(name));
    this.gate = this.session.sharedConnection ? gateFor(client) : undefined;
  }

  /** The DDL `ensureSchema()` runs, for applying through your own migrations instead. */
  get schemaSql(): string {
    return this.text("schema");
  }

  /**
   * Create the table and its expires_at index when missing. On SQLite (a file) it also
   * turns on WAL mode, so several processes can share the file.
   */
  async ensureSchema(): Promise<void> {
    await callStore(this.dialect, "ensureSchema", undefined, () =>
      this.statement(() => this.session.ensureSchema()),
    );
  }

  async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    // The first attempt runs bare: a duplicate or a held key costs the statement and no
    // wrapper beyond this one try.
    try {
      return await this.statement(() => this.claimOnce(key, leaseMs));
    } catch (firstError) {
      // A deadlock, serialization failure or busy database is retried with a jittered
      // backoff: the first attempt's error stands in for attempt 1.
      return callStore(this.dialect, "claim", key, () =>
        withRetry(CLAIM_RETRY, this.isTransient, (n) =>
          n === 1 ? Promise.reject(firstError) : this.statement(() => this.claimOnce(key, leaseMs)),
        ),
      );
    }
  }

  async complete(claim: Claim): Promise<boolean> {
    assertValidKey(claim.key);
    const { key, fencingId } = claim;
    return callStore(this.dialect, "complete", key, () =>
      this.statement(() => this.session.complete(key, fencingId, this.ttlMs)),
    );
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    const { key, fencingId } = claim;
    await callStore(this.dialect, "release", key, () =>
      this.statement(() => this.session.release(key, fencingId, this.ttlMs)),
    );
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    const { key, fencingId } = claim;
    return callStore(this.dialect, "renew", key, () =>
      this.statement(() => this.session.renew(key, fencingId, leaseMs, this.ttlMs)),
    );
  }

  /**
   * Delete records past their expires_at, in batches of 1,000; resolves to the count, and tells
   * `options.onProgress` the running count after each batch.
   */
  async purgeExpired(options?: PurgeOptions): Promise<number> {
    return callStore(this.dialect, "purgeExpired", undefined, () =>
      purgeInBatches(
        PURGE_BATCH,
        async () => {
          const removed = await this.statement(() => this.session.purgeBatch());
          return { found: removed, deleted: removed };
        },
        options?.onProgress,
      ),
    );
  }

  /**
   * Begin a transaction, run `body` with it, then run the dialect's fenced complete in that
   * same transaction and commit: the body's writes and DONE land together. A stale fence
   * rolls back (`completed: false`); a body that throws rolls back and rejects with its own
   * error; a failed BEGIN (retried while busy), complete or COMMIT rolls back and rejects
   * with a {@link BackendError}. {@link lockInTransaction} calls it; you rarely do.
   *
   * The transaction: on a pg or mysql2 Pool, BEGIN … COMMIT on a connection checked out for
   * it (given back after, discarded when a failure may have broken it); on a better-sqlite3
   * Database, BEGIN IMMEDIATE … COMMIT on that one connection. On one connection (SQLite,
   * a pg Client, a mysql2 Connection) every statement joins whatever transaction is open, so
   * this lock's transactions run one at a time there, and its other calls (from any SqlLock
   * on that connection) wait until the open one ends: an async body never shares the
   * connection with another body or claim. Your own statements on that connection are
   * yours to keep out; and a body must not await another lock call on it, or it waits for
   * itself. Write through `tx` only, and let a failed statement's error propagate.
   *
   * @example
   * ```ts
   * import Database from "better-sqlite3";
   * import { lockInTransaction } from "gcp-pubsub-idempotency";
   * import { SqlLock } from "gcp-pubsub-idempotency/sql";
   *
   * const db = new Database("app.db");
   * const backend = new SqlLock({ client: db });
   * await backend.ensureSchema();
   * db.exec("CREATE TABLE IF NOT EXISTS orders (po TEXT, total INTEGER)");
   * await lockInTransaction("orders:4711", { backend }, async (tx) => {
   *   tx.prepare("INSERT INTO orders (po, total) VALUES (?, ?)").run("4711", 99);
   * });
   * ```
   */
  async completeInTransaction<T>(
    claim: Claim,
    body: (tx: SqlTransaction<C>) => Promise<T>,
  ): Promise<TransactionCompletion<T>> {
    assertValidKey(claim.key);
    const { key, fencingId } = claim;
    return callStoreWithBody(this.dialect, "completeInTransaction", key, body, (watched) =>
      this.transaction(async () => {
        // Busy or deadlocked before anything ran: safe to try again.
        const open = await withRetry(CLAIM_RETRY, this.isTransient, () => this.session.begin());
        let value: T;
        try {
          value = await watched(open.tx as SqlTransaction<C>);
        } catch (error) {
          await abandon(open);
          throw error;
        }
        try {
          const completed = await open.complete(key, fencingId, this.ttlMs);
          // Fenced out: the reclaimer's run counts, so none of this one's writes may land.
          if (completed) await open.commit();
          else await open.rollback();
          open.end();
          return { completed, value };
        } catch (error) {
          await abandon(open);
          throw error;
        }
      }),
    );
  }

  /** The client belongs to the caller: closing the lock leaves it open. */
  async close(): Promise<void> {
    this.session.close();
  }

  // Operator calls (the CLI's inspect and release).

  async inspect(key: string): Promise<InspectedRecord | undefined> {
    assertValidKey(key);
    const { record, now } = await callStore(this.dialect, "inspect", key, () =>
      this.statement(() => this.readRecord(key)),
    );
    return record === undefined ? undefined : { key, ...record, now };
  }

  /** One release statement with the operator's fence; when it changes nothing, a read says why. */
  async forceRelease(key: string, fencingId: number): Promise<ForceReleaseOutcome> {
    assertValidKey(key);
    assertFencingId(fencingId);
    // Both statements (the release, and the read that explains a no-op) stay out of any
    // transaction open on a single connection, like every other verb's.
    return callStore(this.dialect, "forceRelease", key, () =>
      this.statement(async (): Promise<ForceReleaseOutcome> => {
        if (await this.session.forceRelease(key, fencingId, this.ttlMs)) {
          return { status: "released", fencingId: fencingId + 1 };
        }
        const { record, now } = await this.readRecord(key);
        const { answer } = forceReleaseTransition(record, now, { fencingId, ttlMs: this.ttlMs });
        // Released by nobody, yet releasable now: a purge and a fresh claim reached the same fence.
        return answer.status === "released" ? { status: "changed", fencingId } : answer;
      }),
    );
  }

  private async readRecord(key: string): Promise<{ record: LockRecord | undefined; now: number }> {
    const row = await this.session.inspect(key);
    if (row === undefined) throw new Error("the inspect statement returned no row");
    const now = toNumber(row.now, "now");
    if (row.state === null || row.state === undefined) return { record: undefined, now };
    if (row.state !== "claimed" && row.state !== "done") {
      throw new Error(`the record has an unknown state ${JSON.stringify(row.state)}`);
    }
    return {
      record: {
        state: row.state,
        fencingId: toNumber(row.fencing_id, "fencing_id"),
        leaseExpiresAt: toNumber(row.lease_expires_at, "lease_expires_at"),
        expiresAt: toNumber(row.expires_at, "expires_at"),
      },
      now,
    };
  }

  /** One claim statement (or the dialect's few); the token in the row tells who won. */
  private async claimOnce(key: string, leaseMs: number): Promise<ClaimOutcome> {
    const token = randomUUID();
    const row = await this.session.claim(key, leaseMs, this.ttlMs, token);
    if (row === undefined) throw new Error("the claim returned no row (purged mid-claim?)");
    const leaseExpiresAt = toNumber(row.lease_expires_at, "lease_expires_at");
    if (row.token === token) {
      return {
        status: "won",
        claim: { key, fencingId: toNumber(row.fencing_id, "fencing_id"), leaseExpiresAt },
      };
    }
    if (row.state === "done") return { status: "done" };
    return { status: "held", leaseExpiresAt };
  }

  /** Run one verb's statements, outside any transaction open on a single connection. */
  private statement<R>(run: () => Promise<R>): Promise<R> {
    return this.gate === undefined ? run() : this.gate.statement(run);
  }

  /** Run a transaction; on a single connection, alone on it. */
  private transaction<R>(run: () => Promise<R>): Promise<R> {
    return this.gate === undefined ? run() : this.gate.transaction(run);
  }

  private text(name: string): string {
    const text = this.sql[name];
    if (text === undefined) throw new Error(`no ${this.dialect} statement ${name}`);
    return text;
  }
}

/**
 * End a transaction that must not commit: roll back, then give the connection back, or have
 * the pool discard it when even the rollback failed (the connection is likely broken).
 */
async function abandon(open: OpenTransaction): Promise<void> {
  try {
    await open.rollback();
    open.end();
  } catch (rollbackError) {
    open.end(rollbackError);
  }
}

function dialectNamed(name: unknown): Dialect {
  const dialect =
    typeof name === "string" && Object.hasOwn(DIALECTS, name)
      ? DIALECTS[name as SqlDialect]
      : undefined;
  if (dialect === undefined) {
    const names = Object.keys(DIALECTS).map((n) => `"${n}"`);
    throw new InvalidConfiguration(
      `SqlLock option dialect must be ${names.slice(0, -1).join(", ")} or ${names.at(-1)}, got ${describe(name)}`,
    );
  }
  return dialect;
}

function detectDialect(client: object): Dialect {
  const dialect = DETECTION_ORDER.find((d) => hasMethods(client, d.detectBy));
  if (dialect !== undefined) return dialect;
  throw new InvalidConfiguration(
    "SqlLock could not tell the dialect of options.client: pass a pg Pool/Client, a " +
      'mysql2/promise Pool, a better-sqlite3 Database, or set dialect: "postgres" | "mysql" | "sqlite"',
  );
}

function assertClientFits(dialect: Dialect, client: object): void {
  const missing = dialect.needs.filter((method) => !hasMethods(client, [method]));
  if (missing.length > 0) {
    throw new InvalidConfiguration(
      `SqlLock dialect "${dialect.name}" needs a client with ${missing.join(", ")}()${dialect.needsHint}`,
    );
  }
}

/** Validate the table name and quote it for the dialect; also derive the index name. */
function parseTable(dialect: Dialect, table: unknown): { quoted: string; index: string } {
  const parts = typeof table === "string" ? table.split(".") : [];
  const allowed = dialect.qualifier ? [1, 2] : [1];
  if (!allowed.includes(parts.length) || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new InvalidConfiguration(
      `SqlLock option table must be an identifier (letters, digits, underscores, not starting with a ` +
        `digit, at most 48 characters each)${dialect.qualifier ? `, optionally "${dialect.qualifier}.table"` : ""}, ` +
        `got ${describe(table)}`,
    );
  }
  const name = parts[parts.length - 1] as string;
  return {
    quoted: parts.map(dialect.quote).join("."),
    index: dialect.quote(`${name}_expires_at_idx`),
  };
}

/** pg returns int8 as a string, mysql2 may too: bring every BIGINT back as a safe number. */
function toNumber(value: unknown, column: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n))
    throw new Error(`${column} is not a safe integer: ${String(value)}`);
  return n;
}
