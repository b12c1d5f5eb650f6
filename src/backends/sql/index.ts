/**
 * `SqlLock`, for PostgreSQL (pg), MySQL/MariaDB (mysql2) and SQLite (better-sqlite3).
 *
 * @module gcp-pubsub-idempotency/sql
 */

export { SqlLock } from "./lock.js";
export type {
  MysqlPoolConnectionLike,
  MysqlPoolLike,
  MysqlQueryable,
} from "./mysql/client.js";
export type {
  PgPoolClientLike,
  PgPoolLike,
  PgQueryable,
  PgResultLike,
} from "./postgres/client.js";
export type { SqliteDatabaseLike, SqliteStatementLike } from "./sqlite/client.js";
export type { SqlClient, SqlDialect, SqlLockOptions, SqlTransaction } from "./types.js";
