// The parts of a mysql2/promise Pool and PoolConnection SqlLock uses, as structural types: the
// package never imports mysql2.

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
  /** Run one prepared statement with bound values (every verb); null binds SQL NULL. */
  execute(sql: string, values: Array<string | number | Buffer | null>): Promise<[unknown, unknown]>;
  /** Run plain SQL text (`ensureSchema`). */
  query(sql: string): Promise<[unknown, unknown]>;
}

/**
 * The part of a mysql2/promise `PoolConnection` SqlLock uses for a transaction; the body of
 * `lockInTransaction` gets the pool's own connection type.
 *
 * @example
 * ```ts
 * import mysql from "mysql2/promise";
 * import type { MysqlPoolConnectionLike } from "gcp-pubsub-idempotency/sql";
 *
 * const connection: MysqlPoolConnectionLike = await mysql.createPool({}).getConnection();
 * connection.release();
 * ```
 */
export interface MysqlPoolConnectionLike extends MysqlQueryable {
  /** Back to the pool. */
  release(): void;
  /** Close it instead, when a failure may have broken it. */
  destroy?(): void;
}

/**
 * The part of a mysql2/promise `Pool` SqlLock uses beyond {@link MysqlQueryable}:
 * `getConnection()` checks out a connection for a transaction.
 *
 * @example
 * ```ts
 * import mysql from "mysql2/promise";
 * import type { MysqlPoolLike } from "gcp-pubsub-idempotency/sql";
 *
 * const pool: MysqlPoolLike = mysql.createPool({ uri: "mysql://root@127.0.0.1:3306/app" });
 * ```
 */
export interface MysqlPoolLike extends MysqlQueryable {
  /** Check out a connection. */
  getConnection(): Promise<MysqlPoolConnectionLike>;
}
