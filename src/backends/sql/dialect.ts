/**
 * The one interface every SQL dialect implements. A dialect is a folder under
 * `src/backends/sql/`: its `.sql` files and one module exporting a {@link Dialect}.
 * `SqlLock` keeps validation, retries, error wrapping and the row → outcome mapping; the
 * dialect knows its driver's calls, its parameters and its round trips.
 */
import type { SqlClient, SqlDialect } from "./types.js";

/** A record as a claim statement returns it; SqlLock turns it into a ClaimOutcome. */
export interface SqlRow {
  state: unknown;
  fencing_id: unknown;
  lease_expires_at: unknown;
  token: unknown;
  /** The stored fingerprint (null when none); read when the claim lost. */
  fingerprint?: unknown;
  /** The stored result (null when none); read when the claim met a done record. */
  result?: unknown;
}

/** A dialect bound to one client and its rendered statements: one method per verb. */
export interface DialectSession {
  /**
   * Run the rendered `schema.sql` (plus whatever the dialect sets up with it), then
   * `upgrade.sql` when `columns.sql` finds a column of it missing (a table made by 0.1).
   */
  ensureSchema(): Promise<void>;
  /**
   * Claim `key` with this call's random `token`, storing `fingerprint` (none: null) when it
   * wins; resolves to the record as it stands after the claim (this call won iff its token
   * is in it), or undefined when no row came back.
   */
  claim(
    key: string,
    leaseMs: number,
    ttlMs: number,
    token: string,
    fingerprint: string | undefined,
  ): Promise<SqlRow | undefined>;
  /**
   * True when the fence matched a live record (now done with `result`, none: null; or
   * already done, left as it is).
   */
  complete(
    key: string,
    fencingId: number,
    ttlMs: number,
    result?: string | undefined,
  ): Promise<boolean>;
  /** Ends the lease and raises the fence; a no-op when fenced out. */
  release(key: string, fencingId: number, ttlMs: number): Promise<void>;
  /** True when the claim is still live and now runs until now + lease. */
  renew(key: string, fencingId: number, leaseMs: number, ttlMs: number): Promise<boolean>;
  /** Deletes one batch (at most `{{purgeBatch}}` rows) of expired records; resolves to the count. */
  purgeBatch(): Promise<number>;
  /** Forget whatever was cached for the client (prepared statements); the client stays open. */
  close(): void;
  /**
   * True when the client is one connection (a SQLite Database, a pg Client, a mysql2
   * Connection): SqlLock then keeps its statements out of an open transaction. False for a
   * pool, where each transaction checks out a connection of its own.
   */
  readonly sharedConnection: boolean;
  /** Begin a transaction on a pooled connection of its own, or on the one connection. */
  begin(): Promise<OpenTransaction>;

  // Operator calls (the CLI's inspect and release).
  /** The server's time and the record of `key` as stored (its columns null when absent). */
  inspect(key: string): Promise<SqlInspectRow>;
  /** `release` with the fence an operator saw: true when it changed the row. */
  forceRelease(key: string, fencingId: number, ttlMs: number): Promise<boolean>;
}

/** What inspect.sql returns: `now`, and the record's columns (null when there is none). */
export interface SqlInspectRow {
  now: unknown;
  state: unknown;
  fencing_id: unknown;
  lease_expires_at: unknown;
  expires_at: unknown;
  fingerprint: unknown;
  result: unknown;
}

/** A transaction begun by {@link DialectSession.begin}, for `completeInTransaction`. */
export interface OpenTransaction {
  /** The connection inside the transaction: the handle the body gets. */
  readonly tx: unknown;
  /** The dialect's `complete` (with no result), run on this transaction's connection. */
  complete(key: string, fencingId: number, ttlMs: number): Promise<boolean>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /** Give a pooled connection back; with `broken` (the error that broke it) it is discarded. */
  end(broken?: unknown): void;
}

/** One SQL dialect: what SqlLock validates against, and how it runs each verb. */
export interface Dialect {
  /** The `dialect` option's value, and the `backend` a BackendError names. */
  readonly name: SqlDialect;
  /**
   * Methods a client must have to be detected as this dialect's driver. Detection tries the
   * most specific shape first (see `DETECTION_ORDER` in dialects.ts).
   */
  readonly detectBy: readonly string[];
  /** Methods a client must have to be used with this dialect. */
  readonly needs: readonly string[];
  /** Appended to the error when a method is missing, e.g. which flavour of the driver to use. */
  readonly needsHint: string;
  /**
   * What a table name's optional first part names, `schema.table` (PostgreSQL) or
   * `database.table` (MySQL); undefined when a table is one identifier only (SQLite). Each
   * part is validated and quoted on its own.
   */
  readonly qualifier: "schema" | "database" | undefined;
  /** Quote one identifier that already passed validation. */
  quote(identifier: string): string;
  /**
   * The `.sql` templates by name; `schema` is the DDL, `upgrade` the migration of a table made
   * by 0.1 (both kept with their comments), `columns` the check whether it is needed.
   * Placeholders: `{{table}}` (the quoted table), `{{name}}` (its last part, unquoted),
   * `{{index}}` (the quoted index name), `{{purgeBatch}}` (rows per purge batch).
   */
  readonly templates: Readonly<Record<string, string>>;
  /**
   * The largest result, in UTF-8 bytes, `complete` stores: `supports.maxResultBytes`. Each
   * dialect's module says where its number comes from.
   */
  readonly maxResultBytes: number;
  /** A deadlock, serialization failure or busy database: a claim may retry it. */
  isTransient(error: object): boolean;
  /** An unknown column (SqlLock then checks it names `fingerprint` or `result`: a 0.1 table). */
  isUnknownColumn(error: object): boolean;
  /** Bind the dialect to a client (already checked against `needs`) and rendered statements. */
  open(client: SqlClient, statements: Statements): DialectSession;
}

/** Rendered statements by template name; throws for a name the dialect has no template for. */
export type Statements = (name: string) => string;

/**
 * Begin a transaction on `connection` by sending `begin` through `run`; COMMIT and ROLLBACK go
 * the same way. `end` gives the connection back, or discards it given the error (a failed
 * BEGIN ends it so).
 */
export async function beginOn(
  connection: unknown,
  run: (text: string) => Promise<unknown>,
  begin: string,
  complete: OpenTransaction["complete"],
  end: OpenTransaction["end"],
): Promise<OpenTransaction> {
  try {
    await run(begin);
  } catch (error) {
    end(error);
    throw error;
  }
  return {
    tx: connection,
    complete,
    async commit() {
      await run("COMMIT");
    },
    async rollback() {
      await run("ROLLBACK");
    },
    end,
  };
}
