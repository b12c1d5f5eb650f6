/**
 * The MySQL/MariaDB dialect (mysql2/promise): autocommit prepared statements; a claim is an
 * upsert then a read, complete and renew read back only when nothing changed.
 */
import type { Dialect, DialectSession, SqlInspectRow, SqlRow, Statements } from "../dialect.js";
import type { SqlClient } from "../index.js";
import check from "./check.sql";
import claim from "./claim.sql";
import complete from "./complete.sql";
import inspect from "./inspect.sql";
import purge from "./purge.sql";
import release from "./release.sql";
import renew from "./renew.sql";
import schema from "./schema.sql";
import select from "./select.sql";

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

type Value = string | number | Buffer;

/** Keys go in as bytes: the VARBINARY column compares them byte for byte. */
const bytes = (key: string): Buffer => Buffer.from(key, "utf8");

export const mysql: Dialect = {
  name: "mysql",
  detectBy: ["execute", "query"],
  needs: ["execute", "query"],
  needsHint: " (use mysql2/promise, not the callback API)",
  schemaQualified: false,
  quote: (identifier) => `\`${identifier}\``,
  templates: { schema, claim, select, check, complete, release, renew, purge, inspect },
  isTransient(error) {
    const { errno } = error as { errno?: unknown };
    return errno === 1213 || errno === 1205;
  },
  open(client: SqlClient, sql: Statements): DialectSession {
    const my = client as MysqlQueryable;
    /** Runs a write; resolves to affectedRows. */
    const write = async (name: string, values: Value[]): Promise<number> => {
      const [result] = await my.execute(sql(name), values);
      const affected = (result as { affectedRows?: unknown }).affectedRows;
      return typeof affected === "number" ? affected : 0;
    };
    const read = async (name: string, values: Value[]): Promise<unknown[]> => {
      const [rows] = await my.execute(sql(name), values);
      return Array.isArray(rows) ? rows : [];
    };
    return {
      async ensureSchema() {
        await my.query(sql("schema"));
      },
      async claim(key, leaseMs, ttlMs, token) {
        const k = bytes(key);
        await write("claim", [k, leaseMs, leaseMs, ttlMs, token, leaseMs]);
        return (await read("select", [k]))[0] as SqlRow | undefined;
      },
      async complete(key, fencingId, ttlMs) {
        const k = bytes(key);
        if ((await write("complete", [ttlMs, k, fencingId])) > 0) return true;
        // Without FOUND_ROWS an unchanged (already done) row counts 0: a retried complete.
        return (await read("check", [k, fencingId, "done"])).length > 0;
      },
      async release(key, fencingId, ttlMs) {
        await write("release", [ttlMs, bytes(key), fencingId]);
      },
      async renew(key, fencingId, leaseMs, ttlMs) {
        const k = bytes(key);
        if ((await write("renew", [leaseMs, leaseMs, ttlMs, k, fencingId])) > 0) return true;
        // A renewal within the same millisecond changes nothing; still a live claim.
        return (await read("check", [k, fencingId, "claimed"])).length > 0;
      },
      purgeBatch: () => write("purge", []),
      close() {},
      // Operator calls (the CLI's inspect and release).
      async inspect(key) {
        return (await read("inspect", [bytes(key)]))[0] as SqlInspectRow;
      },
      async forceRelease(key, fencingId, ttlMs) {
        return (await write("release", [ttlMs, bytes(key), fencingId])) > 0;
      },
    };
  },
};
