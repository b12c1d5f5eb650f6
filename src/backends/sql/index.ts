/**
 * `SqlLock`, for PostgreSQL (pg), MySQL/MariaDB (mysql2) and SQLite (better-sqlite3).
 *
 * @module gcp-pubsub-idempotency/sql
 */
import { createHash, randomUUID } from "node:crypto";
import { DEFAULT_TTL_MS } from "../../core/constants.js";
import { BackendError, InvalidConfiguration } from "../../core/errors.js";
import type { Claim, ClaimOutcome, LockBackend } from "../../core/types.js";
import { assertPositiveMs, assertValidKey, describe, ttlOption } from "../../core/validate.js";
import { hasMethods, readOptions } from "../shared/options.js";
import mysqlCheck from "./mysql/check.sql";
import mysqlClaim from "./mysql/claim.sql";
import mysqlComplete from "./mysql/complete.sql";
import mysqlPurge from "./mysql/purge.sql";
import mysqlRelease from "./mysql/release.sql";
import mysqlRenew from "./mysql/renew.sql";
import mysqlSchema from "./mysql/schema.sql";
import mysqlSelect from "./mysql/select.sql";
import pgClaim from "./postgres/claim.sql";
import pgComplete from "./postgres/complete.sql";
import pgPurge from "./postgres/purge.sql";
import pgRelease from "./postgres/release.sql";
import pgRenew from "./postgres/renew.sql";
import pgSchema from "./postgres/schema.sql";
import sqliteClaim from "./sqlite/claim.sql";
import sqliteComplete from "./sqlite/complete.sql";
import sqlitePeek from "./sqlite/peek.sql";
import sqlitePurge from "./sqlite/purge.sql";
import sqliteRelease from "./sqlite/release.sql";
import sqliteRenew from "./sqlite/renew.sql";
import sqliteSchema from "./sqlite/schema.sql";

/**
 * The SQL dialects {@link SqlLock} speaks: PostgreSQL (pg; also AlloyDB), MySQL/MariaDB
 * (mysql2) and SQLite (better-sqlite3). Detected from the client when not given.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import { type SqlDialect, SqlLock } from "gcp-pubsub-idempotency/sql";
 *
 * const dialect: SqlDialect = "postgres";
 * const backend = new SqlLock({ client: new pg.Pool(), dialect });
 * ```
 */
export type SqlDialect = "postgres" | "mysql" | "sqlite";

/**
 * The part of a pg `Pool` or `Client` SqlLock uses. Structural, so the package never
 * imports pg itself.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import type { PgQueryable } from "gcp-pubsub-idempotency/sql";
 *
 * const client: PgQueryable = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * ```
 */
export interface PgQueryable {
  /** Run one named prepared statement (every verb). */
  query(config: { name: string; text: string; values: unknown[] }): Promise<PgResultLike>;
  /** Run plain SQL text (`ensureSchema`). */
  query(text: string): Promise<unknown>;
}
/**
 * The part of a pg `QueryResult` SqlLock reads.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import type { PgResultLike } from "gcp-pubsub-idempotency/sql";
 *
 * const result: PgResultLike = await new pg.Pool().query("SELECT 1 AS one");
 * console.log(result.rows[0], result.rowCount);
 * ```
 */
export interface PgResultLike {
  /** The returned rows. */
  rows: Array<Record<string, unknown>>;
  /** Rows affected (what `purgeExpired` counts); null for statements without a count. */
  rowCount: number | null;
}

/**
 * The part of a mysql2/promise `Pool` (or `Connection`) SqlLock uses; the callback API of
 * mysql2 does not fit.
 *
 * @example
 * ```ts
 * import mysql from "mysql2/promise";
 * import type { MysqlQueryable } from "gcp-pubsub-idempotency/sql";
 *
 * const client: MysqlQueryable = mysql.createPool({ uri: "mysql://root@127.0.0.1:3306/app" });
 * ```
 */
export interface MysqlQueryable {
  /** Run one prepared statement with bound values (every verb). */
  execute(sql: string, values: Array<string | number | Buffer>): Promise<[unknown, unknown]>;
  /** Run plain SQL text (`ensureSchema`). */
  query(sql: string): Promise<[unknown, unknown]>;
}

/**
 * The part of a better-sqlite3 `Database` SqlLock uses.
 *
 * @example
 * ```ts
 * import Database from "better-sqlite3";
 * import type { SqliteDatabaseLike } from "gcp-pubsub-idempotency/sql";
 *
 * const client: SqliteDatabaseLike = new Database("idempotency.db");
 * ```
 */
export interface SqliteDatabaseLike {
  /** Compile a statement; SqlLock prepares each one once and reuses it. */
  prepare(source: string): SqliteStatementLike;
  /** Run SQL text (`ensureSchema`). */
  exec(source: string): unknown;
  /** Read or set a pragma (`busy_timeout`, and `journal_mode = WAL` in `ensureSchema`). */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  /** True for an in-memory database, which keeps its own journal mode. */
  readonly memory?: boolean;
}
/**
 * The part of a better-sqlite3 `Statement` SqlLock uses.
 *
 * @example
 * ```ts
 * import Database from "better-sqlite3";
 * import type { SqliteStatementLike } from "gcp-pubsub-idempotency/sql";
 *
 * const statement: SqliteStatementLike = new Database(":memory:").prepare("SELECT 1 AS one");
 * console.log(statement.get()); // { one: 1 }
 * ```
 */
export interface SqliteStatementLike {
  /** Run a write with named parameters; `changes` counts the rows it changed. */
  run(...params: unknown[]): {
    /** Rows inserted, updated or deleted. */
    changes: number;
  };
  /** Run a query with named parameters; resolves to its first row or undefined. */
  get(...params: unknown[]): unknown;
}

/**
 * Any client SqlLock accepts: a pg `Pool` or `Client`, a mysql2/promise `Pool`, or a
 * better-sqlite3 `Database`. SqlLock never closes it: the client is yours.
 *
 * @example
 * ```ts
 * import Database from "better-sqlite3";
 * import mysql from "mysql2/promise";
 * import pg from "pg";
 * import type { SqlClient } from "gcp-pubsub-idempotency/sql";
 *
 * const clients: SqlClient[] = [new pg.Pool(), mysql.createPool({}), new Database(":memory:")];
 * ```
 */
export type SqlClient = PgQueryable | MysqlQueryable | SqliteDatabaseLike;

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
export interface SqlLockOptions {
  /** A pg Pool or Client, a mysql2/promise Pool, or a better-sqlite3 Database. */
  client: SqlClient;
  /** Detected from the client's shape when omitted. */
  dialect?: SqlDialect;
  /**
   * Default `idempotency_records`; PostgreSQL also takes `schema.table`. Letters, digits and
   * underscores, at most 48 characters per part.
   */
  table?: string;
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to `MAX_TTL_MS` (10 years);
   * default {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number;
}

const DEFAULT_TABLE = "idempotency_records";
const PURGE_BATCH = 1000;
const CLAIM_ATTEMPTS = 5;
/** busy_timeout set on a SQLite connection that has none, so BEGIN IMMEDIATE waits. */
const SQLITE_BUSY_MS = 5000;
// Short enough that the derived index name stays within PostgreSQL's 63-byte identifiers.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

type Verb = "claim" | "complete" | "release" | "renew" | "purgeExpired" | "ensureSchema";
interface Row {
  state: unknown;
  fencing_id: unknown;
  lease_expires_at: unknown;
  token: unknown;
}

/**
 * A LockBackend over one SQL table: PostgreSQL (pg), MySQL/MariaDB (mysql2) or SQLite
 * (better-sqlite3). Time is the database server's clock, read inside each statement.
 * Constructing does no I/O; call `ensureSchema()` once, or apply the shipped `schema.sql`.
 *
 * Round trips: PostgreSQL one named prepared statement per verb; MySQL two autocommit
 * statements per claim (upsert, then read), one for the other verbs; SQLite a read that
 * answers a live record, else one upsert, and one statement for the other verbs.
 *
 * Failures reject with a {@link BackendError} naming the dialect, the verb and the key; a
 * deadlock or serialization failure on claim is retried a few times first.
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
export class SqlLock implements LockBackend {
  /** The dialect in use, given or detected from the client. */
  readonly dialect: SqlDialect;
  /** The table of the records, as given (unquoted). */
  readonly table: string;
  /** How long a DONE key suppresses duplicates, in ms. */
  readonly ttlMs: number;
  private readonly client: SqlClient;
  private readonly sql: Record<string, string>;
  private readonly names: Record<string, string> = {};
  private readonly sqliteStatements = new Map<string, SqliteStatementLike>();
  private sqliteReady = false;

  /**
   * Checks every option before any I/O: a missing or unusable `client`, an unknown
   * `dialect`, a bad `table`, or a `ttlMs` that is not a whole number of ms from 1 to
   * `MAX_TTL_MS` throws {@link InvalidConfiguration} naming the option.
   */
  constructor(options: SqlLockOptions) {
    const read = readOptions("SqlLock", options, false, ["client", "dialect", "table", "ttlMs"]);
    const client = read.client;
    if (client === null || (typeof client !== "object" && typeof client !== "function")) {
      throw new InvalidConfiguration(
        `SqlLock option client must be a pg, mysql2/promise or better-sqlite3 client, got ${describe(client)}`,
      );
    }
    this.client = client as SqlClient;
    const dialect = read.dialect === undefined ? detectDialect(client) : read.dialect;
    if (dialect !== "postgres" && dialect !== "mysql" && dialect !== "sqlite") {
      throw new InvalidConfiguration(
        `SqlLock option dialect must be "postgres", "mysql" or "sqlite", got ${describe(dialect)}`,
      );
    }
    this.dialect = dialect;
    assertClientFits(this.dialect, client);
    this.ttlMs = ttlOption(read.ttlMs, DEFAULT_TTL_MS);
    const table = read.table === undefined ? DEFAULT_TABLE : read.table;
    const { quoted, index } = parseTable(this.dialect, table);
    this.table = table as string;
    const templates: Record<SqlDialect, Record<string, string>> = {
      postgres: {
        schema: pgSchema,
        claim: pgClaim,
        complete: pgComplete,
        release: pgRelease,
        renew: pgRenew,
        purge: pgPurge,
      },
      mysql: {
        schema: mysqlSchema,
        claim: mysqlClaim,
        select: mysqlSelect,
        check: mysqlCheck,
        complete: mysqlComplete,
        release: mysqlRelease,
        renew: mysqlRenew,
        purge: mysqlPurge,
      },
      sqlite: {
        schema: sqliteSchema,
        peek: sqlitePeek,
        claim: sqliteClaim,
        complete: sqliteComplete,
        release: sqliteRelease,
        renew: sqliteRenew,
        purge: sqlitePurge,
      },
    };
    this.sql = {};
    for (const [name, text] of Object.entries(templates[this.dialect])) {
      const rendered = text.replaceAll("{{table}}", quoted).replaceAll("{{index}}", index);
      this.sql[name] = rendered;
      // A prepared statement's name is per connection: derive it from the text so two
      // SqlLocks on different tables never clash over one name.
      this.names[name] =
        `gpi_${name}_${createHash("sha256").update(rendered).digest("hex").slice(0, 16)}`;
    }
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
    await this.guard("ensureSchema", undefined, async () => {
      const ddl = this.text("schema");
      if (this.dialect === "postgres") {
        await (this.client as PgQueryable).query(ddl);
      } else if (this.dialect === "mysql") {
        await (this.client as MysqlQueryable).query(ddl);
      } else {
        const db = this.client as SqliteDatabaseLike;
        // WAL lets several processes share the file; an in-memory database has no journal.
        if (db.memory !== true) db.pragma("journal_mode = WAL");
        this.prepareSqlite();
        db.exec(ddl);
      }
    });
  }

  async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.claimOnce(key, leaseMs);
      } catch (error) {
        if (attempt >= CLAIM_ATTEMPTS || !this.isTransient(error)) {
          throw new BackendError(this.dialect, "claim", key, error);
        }
        // Jittered, growing backoff: contending claims spread out instead of colliding again.
        await sleep(attempt * 5 + Math.random() * 20);
      }
    }
  }

  async complete(claim: Claim): Promise<boolean> {
    assertValidKey(claim.key);
    const { key, fencingId } = claim;
    return this.guard("complete", key, async () => {
      if (this.dialect === "postgres") {
        return (await this.pg("complete", [key, fencingId, this.ttlMs])).rows.length > 0;
      }
      if (this.dialect === "mysql") {
        const k = bytes(key);
        if ((await this.mysql("complete", [this.ttlMs, k, fencingId])) > 0) return true;
        // Without FOUND_ROWS an unchanged (already done) row counts 0: a retried complete.
        return (await this.mysqlRows("check", [k, fencingId, "done"])).length > 0;
      }
      return this.sqlite("complete").run({ key, fence: fencingId, ttl: this.ttlMs }).changes > 0;
    });
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    const { key, fencingId } = claim;
    await this.guard("release", key, async () => {
      if (this.dialect === "postgres") await this.pg("release", [key, fencingId, this.ttlMs]);
      else if (this.dialect === "mysql")
        await this.mysql("release", [this.ttlMs, bytes(key), fencingId]);
      else this.sqlite("release").run({ key, fence: fencingId, ttl: this.ttlMs });
    });
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    const { key, fencingId } = claim;
    return this.guard("renew", key, async () => {
      if (this.dialect === "postgres") {
        return (await this.pg("renew", [key, fencingId, leaseMs, this.ttlMs])).rows.length > 0;
      }
      if (this.dialect === "mysql") {
        const k = bytes(key);
        if ((await this.mysql("renew", [leaseMs, leaseMs, this.ttlMs, k, fencingId])) > 0)
          return true;
        // A renewal within the same millisecond changes nothing; still a live claim.
        return (await this.mysqlRows("check", [k, fencingId, "claimed"])).length > 0;
      }
      return (
        this.sqlite("renew").run({ key, fence: fencingId, lease: leaseMs, ttl: this.ttlMs })
          .changes > 0
      );
    });
  }

  /** Delete records past their expires_at, in batches of 1,000; resolves to the count. */
  async purgeExpired(): Promise<number> {
    return this.guard("purgeExpired", undefined, async () => {
      let total = 0;
      for (;;) {
        let removed: number;
        if (this.dialect === "postgres") {
          removed = (await this.pg("purge", [PURGE_BATCH])).rowCount ?? 0;
        } else if (this.dialect === "mysql") {
          removed = await this.mysql("purge", []);
        } else {
          removed = this.sqlite("purge").run({ limit: PURGE_BATCH }).changes;
        }
        total += removed;
        if (removed < PURGE_BATCH) return total;
      }
    });
  }

  /** The client belongs to the caller: closing the lock leaves it open. */
  async close(): Promise<void> {
    this.sqliteStatements.clear();
  }

  private async claimOnce(key: string, leaseMs: number): Promise<ClaimOutcome> {
    const token = randomUUID();
    let row: Row | undefined;
    if (this.dialect === "postgres") {
      const values = [key, leaseMs, this.ttlMs, token];
      row = (await this.pg("claim", values)).rows[0] as Row | undefined;
      // Only a row deleted between the conflict and the update leaves RETURNING empty.
      row ??= (await this.pg("claim", values)).rows[0] as Row | undefined;
    } else if (this.dialect === "mysql") {
      const k = bytes(key);
      await this.mysql("claim", [k, leaseMs, leaseMs, this.ttlMs, token, leaseMs]);
      row = (await this.mysqlRows("select", [k]))[0] as Row | undefined;
    } else {
      row = (this.sqlite("peek").get({ key }) ??
        this.sqlite("claim").get({ key, lease: leaseMs, ttl: this.ttlMs, token })) as
        | Row
        | undefined;
    }
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

  private text(name: string): string {
    const text = this.sql[name];
    if (text === undefined) throw new Error(`no ${this.dialect} statement ${name}`);
    return text;
  }

  private async pg(name: string, values: unknown[]): Promise<PgResultLike> {
    const client = this.client as PgQueryable;
    return client.query({ name: this.names[name] ?? name, text: this.text(name), values });
  }

  /** Runs a mysql write; resolves to affectedRows. */
  private async mysql(name: string, values: Array<string | number | Buffer>): Promise<number> {
    const [result] = await (this.client as MysqlQueryable).execute(this.text(name), values);
    const affected = (result as { affectedRows?: unknown }).affectedRows;
    return typeof affected === "number" ? affected : 0;
  }

  private async mysqlRows(
    name: string,
    values: Array<string | number | Buffer>,
  ): Promise<unknown[]> {
    const [rows] = await (this.client as MysqlQueryable).execute(this.text(name), values);
    return Array.isArray(rows) ? rows : [];
  }

  private prepareSqlite(): void {
    if (this.sqliteReady) return;
    const db = this.client as SqliteDatabaseLike;
    // Without a busy timeout a second writer fails at once instead of waiting its turn.
    if (db.pragma("busy_timeout", { simple: true }) === 0) {
      db.pragma(`busy_timeout = ${SQLITE_BUSY_MS}`);
    }
    this.sqliteReady = true;
  }

  private sqlite(name: string): SqliteStatementLike {
    this.prepareSqlite();
    let statement = this.sqliteStatements.get(name);
    if (statement === undefined) {
      statement = (this.client as SqliteDatabaseLike).prepare(this.text(name));
      this.sqliteStatements.set(name, statement);
    }
    return statement;
  }

  private isTransient(error: unknown): boolean {
    if (error === null || typeof error !== "object") return false;
    const { code, errno } = error as { code?: unknown; errno?: unknown };
    if (this.dialect === "postgres") return code === "40001" || code === "40P01";
    if (this.dialect === "mysql") return errno === 1213 || errno === 1205;
    return typeof code === "string" && code.startsWith("SQLITE_BUSY");
  }

  private async guard<T>(verb: Verb, key: string | undefined, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof BackendError) throw error;
      throw new BackendError(this.dialect, verb, key, error);
    }
  }
}

function detectDialect(client: object): SqlDialect {
  if (hasMethods(client, ["prepare", "pragma"])) return "sqlite";
  if (hasMethods(client, ["execute", "query"])) return "mysql";
  if (hasMethods(client, ["query"])) return "postgres";
  throw new InvalidConfiguration(
    "SqlLock could not tell the dialect of options.client: pass a pg Pool/Client, a " +
      'mysql2/promise Pool, a better-sqlite3 Database, or set dialect: "postgres" | "mysql" | "sqlite"',
  );
}

function assertClientFits(dialect: SqlDialect, client: object): void {
  const needs = {
    postgres: ["query"],
    mysql: ["execute", "query"],
    sqlite: ["prepare", "exec", "pragma"],
  };
  const missing = needs[dialect].filter((method) => !hasMethods(client, [method]));
  if (missing.length > 0) {
    throw new InvalidConfiguration(
      `SqlLock dialect "${dialect}" needs a client with ${missing.join(", ")}()` +
        (dialect === "mysql" ? " (use mysql2/promise, not the callback API)" : ""),
    );
  }
}

/** Validate the table name and quote it for the dialect; also derive the index name. */
function parseTable(dialect: SqlDialect, table: unknown): { quoted: string; index: string } {
  const parts = typeof table === "string" ? table.split(".") : [];
  const allowed = dialect === "postgres" ? [1, 2] : [1];
  if (!allowed.includes(parts.length) || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new InvalidConfiguration(
      `SqlLock table must be an identifier (letters, digits, underscores, not starting with a ` +
        `digit, at most 48 characters)${dialect === "postgres" ? ', optionally "schema.table"' : ""}, ` +
        `got ${describe(table)}`,
    );
  }
  const q = dialect === "mysql" ? (s: string) => `\`${s}\`` : (s: string) => `"${s}"`;
  const name = parts[parts.length - 1] as string;
  return { quoted: parts.map(q).join("."), index: q(`${name}_expires_at_idx`) };
}

const bytes = (key: string): Buffer => Buffer.from(key, "utf8");

/** pg returns int8 as a string, mysql2 may too: bring every BIGINT back as a safe number. */
function toNumber(value: unknown, column: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n))
    throw new Error(`${column} is not a safe integer: ${String(value)}`);
  return n;
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
