// The types of the /sql entry besides SqlLock: the dialect names, the clients SqlLock accepts,
// its options and the transaction handle of each client. Their own module, so the dialects
// need not import the lock.
import type { DEFAULT_TTL_MS } from "../../core/constants.js";
import type { InvalidConfiguration } from "../../core/errors.js";
import type { MysqlQueryable } from "./mysql/client.js";
import type { PgPoolClientLike, PgQueryable } from "./postgres/client.js";
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

/**
 * The transaction handle {@link gcp-pubsub-idempotency!lockInTransaction}'s body gets from a `SqlLock` over client
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
   * own tables for {@link gcp-pubsub-idempotency!lockInTransaction}). Letters, digits and underscores, not starting
   * with a digit, at most 48 characters per part; each part is quoted.
   */
  table?: string | undefined;
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to `MAX_TTL_MS` (10 years);
   * default {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number | undefined;
}
