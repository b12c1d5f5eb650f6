// The parts of a pg Pool, Client and PoolClient SqlLock uses, as structural types: the package
// never imports pg.

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
  /** Run plain SQL text (`ensureSchema`, and BEGIN / COMMIT / ROLLBACK). */
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
 * The part of a pg `PoolClient` (a connection checked out of a `Pool`) SqlLock uses for a
 * transaction; the body of `lockInTransaction` gets the pool's own client type.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import type { PgPoolClientLike } from "gcp-pubsub-idempotency/sql";
 *
 * const client: PgPoolClientLike = await new pg.Pool().connect();
 * client.release();
 * ```
 */
export interface PgPoolClientLike extends PgQueryable {
  /** Back to the pool; with an error (or true) the pool discards the connection. */
  release(error?: Error | boolean): void;
  /** pg emits `error` on a checked-out client whose connection dies between queries. */
  on?(event: "error", listener: (error: Error) => void): unknown;
  /** Removes that listener again before the client goes back to the pool. */
  off?(event: "error", listener: (error: Error) => void): unknown;
}

/**
 * The part of a pg `Pool` SqlLock uses beyond {@link PgQueryable}: `connect()` checks out a
 * connection for a transaction. A pg `Client` (one connection) has no `totalCount`.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import type { PgPoolLike } from "gcp-pubsub-idempotency/sql";
 *
 * const pool: PgPoolLike = new pg.Pool({ max: 10 });
 * console.log(pool.totalCount);
 * ```
 */
export interface PgPoolLike extends PgQueryable {
  /** Check out a connection. */
  connect(): Promise<PgPoolClientLike>;
  /** Connections open: its presence tells a pool from a single `Client`. */
  readonly totalCount: number;
}
