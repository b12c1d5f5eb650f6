import { DEFAULT_TTL_MS } from "../../core/constants.js";
import { type BackendError, InvalidConfiguration } from "../../core/errors.js";
import type {
  BackendSupport,
  Claim,
  ClaimOptions,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  PurgeOptions,
  TransactionalLockBackend,
  TransactionCompletion,
} from "../../core/port.js";
import { claimFingerprint, completeResult } from "../../core/record-fields.js";
import { offerTrustedPort } from "../../core/trusted-port.js";
import {
  assertFencingId,
  assertPositiveMs,
  assertValidKey,
  describe,
  knownOptions,
  readOptions,
  ttlOption,
} from "../../core/validate.js";
import { dialectOf } from "./dialects.js";
import { SqlStatements } from "./statements.js";
import { renderStatements } from "./table.js";
import type { SqlClient, SqlDialect, SqlLockOptions, SqlTransaction } from "./types.js";

const DEFAULT_TABLE = "idempotency_records";

/** The options SqlLock takes; any other name is refused. */
const NAMES = ["client", "dialect", "table", "ttlMs"] as const;
const KNOWN = knownOptions(NAMES, "backend");

/**
 * A LockBackend over one SQL table: PostgreSQL (pg), MySQL/MariaDB (mysql2) or SQLite
 * (better-sqlite3). Time is the database server's clock, read inside each statement.
 * Constructing does no I/O; call `ensureSchema()` once, or apply the shipped `schema.sql`
 * (a table made by 0.1: `ensureSchema()` adds the new columns, or apply `upgrade.sql`).
 *
 * Results and fingerprints (`once()`, `step()`, `fingerprint`) are nullable columns of the
 * record: a claim writes its fingerprint in the statement that wins, and a complete its result
 * in the statement that sets done, so neither costs a round trip.
 *
 * Round trips: PostgreSQL one named prepared statement per verb; MySQL a read that answers a
 * live record, else one insert or fenced update (an upsert and a read more after a lost
 * race), and one statement for the other verbs; SQLite a read that answers a live record,
 * else one upsert, and one statement for the other verbs.
 *
 * Failures reject with a {@link BackendError} naming the dialect, the verb and the key; a
 * deadlock or serialization failure on claim is retried a few times first.
 *
 * {@link gcp-pubsub-idempotency!lockInTransaction} runs its body in a transaction of this database and completes
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
  /**
   * Results and fingerprints, kept in the record's `result` and `fingerprint` columns.
   * `maxResultBytes` per dialect: 16 MiB on PostgreSQL (`text` reaches about 1 GB, but every
   * duplicate reads the result back) and SQLite (its strings reach 1e9 bytes, likewise); on
   * MySQL/MariaDB 16 MiB less 64 KiB, so the `MEDIUMTEXT` (2^24 - 1 bytes) and the statement
   * fit MariaDB's default 16 MiB `max_allowed_packet`.
   */
  readonly supports: BackendSupport;
  private readonly statements: SqlStatements<SqlTransaction<C>>;

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
    const dialect = dialectOf(client, read.dialect);
    this.dialect = dialect.name;
    this.ttlMs = ttlOption(read.ttlMs, DEFAULT_TTL_MS);
    const table = read.table === undefined ? DEFAULT_TABLE : read.table;
    const sql = renderStatements(dialect, table);
    this.table = table as string;
    this.statements = new SqlStatements(dialect, client as SqlClient, sql, this.ttlMs);
    this.supports = { results: true, fingerprints: true, maxResultBytes: dialect.maxResultBytes };
    if (new.target === SqlLock) offerTrustedPort(this, this.statements.port());
  }

  /** The DDL `ensureSchema()` runs, for applying through your own migrations instead. */
  get schemaSql(): string {
    return this.statements.text("schema");
  }

  /**
   * The migration of a table made by 0.1 (it adds the nullable `fingerprint` and `result`
   * columns), for applying through your own migrations; `ensureSchema()` runs it when needed.
   */
  get upgradeSql(): string {
    return this.statements.text("upgrade");
  }

  /**
   * Create the table and its expires_at index when missing, and add the `fingerprint` and
   * `result` columns to a table made by 0.1 (after reading that they are missing). On SQLite
   * (a file) it also turns on WAL mode, so several processes can share the file.
   */
  ensureSchema(): Promise<void> {
    return this.statements.ensureSchema();
  }

  async claim(key: string, leaseMs: number, options?: ClaimOptions): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    return this.statements.claim(key, leaseMs, claimFingerprint(options));
  }

  async complete(claim: Claim, result?: string): Promise<boolean> {
    assertValidKey(claim.key);
    return this.statements.complete(claim, completeResult(result, this.supports.maxResultBytes));
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    return this.statements.release(claim);
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    return this.statements.renew(claim, leaseMs);
  }

  /**
   * Delete records past their expires_at, in batches of 1,000; resolves to the count, and tells
   * `options.onProgress` the running count after each batch.
   */
  purgeExpired(options?: PurgeOptions): Promise<number> {
    return this.statements.purgeExpired(options);
  }

  /**
   * Begin a transaction, run `body` with it, then run the dialect's fenced complete in that
   * same transaction and commit: the body's writes and DONE land together. A stale fence
   * rolls back (`completed: false`); a body that throws rolls back and rejects with its own
   * error; a failed BEGIN (retried while busy), complete or COMMIT rolls back and rejects
   * with a {@link BackendError}. {@link gcp-pubsub-idempotency!lockInTransaction} calls it; you rarely do.
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
    return this.statements.completeInTransaction(claim, body);
  }

  /** The client belongs to the caller: closing the lock leaves it open. */
  async close(): Promise<void> {
    this.statements.close();
  }

  // Operator calls (the CLI's inspect and release).

  async inspect(key: string): Promise<InspectedRecord | undefined> {
    assertValidKey(key);
    return this.statements.inspect(key);
  }

  /** One release statement with the operator's fence; when it changes nothing, a read says why. */
  async forceRelease(key: string, fencingId: number): Promise<ForceReleaseOutcome> {
    assertValidKey(key);
    assertFencingId(fencingId);
    return this.statements.forceRelease(key, fencingId);
  }
}
