// The parts of a better-sqlite3 Database and Statement SqlLock uses, as structural types: the
// package never imports better-sqlite3.

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
  /**
   * True while a transaction is open: checked before the fenced complete, so one the body
   * ended (a COMMIT or ROLLBACK of its own) never lets DONE land alone.
   */
  readonly inTransaction?: boolean;
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
