/**
 * The PostgreSQL dialect (pg; also AlloyDB): one named prepared statement per verb.
 */
import { createHash } from "node:crypto";
import type { Dialect, DialectSession, SqlInspectRow, SqlRow, Statements } from "../dialect.js";
import type { SqlClient } from "../index.js";
import claim from "./claim.sql";
import complete from "./complete.sql";
import inspect from "./inspect.sql";
import purge from "./purge.sql";
import release from "./release.sql";
import renew from "./renew.sql";
import schema from "./schema.sql";

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

export const postgres: Dialect = {
  name: "postgres",
  detectBy: ["query"],
  needs: ["query"],
  needsHint: "",
  schemaQualified: true,
  quote: (identifier) => `"${identifier}"`,
  templates: { schema, claim, complete, release, renew, purge, inspect },
  isTransient(error) {
    const { code } = error as { code?: unknown };
    return code === "40001" || code === "40P01";
  },
  open(client: SqlClient, sql: Statements): DialectSession {
    const pg = client as PgQueryable;
    const names = new Map<string, string>();
    const run = (name: string, values: unknown[]): Promise<PgResultLike> => {
      const text = sql(name);
      let prepared = names.get(name);
      if (prepared === undefined) {
        // A prepared statement's name is per connection: derive it from the text so two
        // SqlLocks on different tables never clash over one name.
        prepared = `gpi_${name}_${createHash("sha256").update(text).digest("hex").slice(0, 16)}`;
        names.set(name, prepared);
      }
      return pg.query({ name: prepared, text, values });
    };
    return {
      async ensureSchema() {
        await pg.query(sql("schema"));
      },
      async claim(key, leaseMs, ttlMs, token) {
        const values = [key, leaseMs, ttlMs, token];
        // Only a row deleted between the conflict and the update leaves RETURNING empty.
        return ((await run("claim", values)).rows[0] ?? (await run("claim", values)).rows[0]) as
          | SqlRow
          | undefined;
      },
      async complete(key, fencingId, ttlMs) {
        return (await run("complete", [key, fencingId, ttlMs])).rows.length > 0;
      },
      async release(key, fencingId, ttlMs) {
        await run("release", [key, fencingId, ttlMs]);
      },
      async renew(key, fencingId, leaseMs, ttlMs) {
        return (await run("renew", [key, fencingId, leaseMs, ttlMs])).rows.length > 0;
      },
      async purgeBatch() {
        return (await run("purge", [])).rowCount ?? 0;
      },
      close() {},
      // Operator calls (the CLI's inspect and release).
      async inspect(key) {
        return (await run("inspect", [key])).rows[0] as unknown as SqlInspectRow;
      },
      async forceRelease(key, fencingId, ttlMs) {
        return ((await run("release", [key, fencingId, ttlMs])).rowCount ?? 0) > 0;
      },
    };
  },
};
