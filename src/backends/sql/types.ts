// The two types every SQL file speaks of, apart from SqlLock itself: the dialect names and the
// clients SqlLock accepts. Their own module, so the dialects need not import the entry module.
import type { MysqlQueryable } from "./mysql/client.js";
import type { PgQueryable } from "./postgres/client.js";
import type { SqliteDatabaseLike } from "./sqlite/client.js";

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
