/**
 * The PostgreSQL dialect (pg; also AlloyDB): one named prepared statement per verb; a
 * transaction on a connection checked out of the Pool (or on the one Client).
 */
import { createHash } from "node:crypto";
import {
  beginOn,
  type Dialect,
  type DialectSession,
  type SqlInspectRow,
  type SqlRow,
  type Statements,
} from "../dialect.js";
import type { SqlClient } from "../types.js";
import claim from "./claim.sql";
import type { PgPoolClientLike, PgPoolLike, PgQueryable, PgResultLike } from "./client.js";
import columns from "./columns.sql";
import complete from "./complete.sql";
import inspect from "./inspect.sql";
import purge from "./purge.sql";
import release from "./release.sql";
import renew from "./renew.sql";
import schema from "./schema.sql";
import upgrade from "./upgrade.sql";

/** True for a pg Pool: each transaction then checks out a connection of its own. */
function isPool(client: object): client is PgPoolLike {
  const { connect, totalCount } = client as Partial<PgPoolLike>;
  return typeof connect === "function" && typeof totalCount === "number";
}

/**
 * The largest result kept: 16 MiB. A `text` value may reach about 1 GB (PostgreSQL manual,
 * "Character Types"), but every duplicate reads the record's result back and pg parses it
 * into one JS string; 16 MiB bounds that, as for InMemoryLock and RedisLock.
 */
const MAX_RESULT_BYTES = 16 * 1024 * 1024;

export const postgres: Dialect = {
  name: "postgres",
  detectBy: ["query"],
  needs: ["query"],
  needsHint: "",
  qualifier: "schema",
  quote: (identifier) => `"${identifier}"`,
  templates: { schema, upgrade, columns, claim, complete, release, renew, purge, inspect },
  maxResultBytes: MAX_RESULT_BYTES,
  isUnknownColumn: (error) => (error as { code?: unknown }).code === "42703",
  isTransient(error) {
    const { code } = error as { code?: unknown };
    return code === "40001" || code === "40P01";
  },
  open(client: SqlClient, sql: Statements): DialectSession {
    const pg = client as PgQueryable;
    const pooled = isPool(pg);
    const names = new Map<string, string>();
    const prepared = (name: string, text: string): string => {
      let found = names.get(name);
      if (found === undefined) {
        // A prepared statement's name is per connection: derive it from the text so two
        // SqlLocks on different tables never clash over one name.
        found = `gpi_${name}_${createHash("sha256").update(text).digest("hex").slice(0, 16)}`;
        names.set(name, found);
      }
      return found;
    };
    /** The verbs on one queryable: the pool (or Client), or a connection in a transaction. */
    const verbsOn = (connection: PgQueryable) => {
      const run = (name: string, values: unknown[]): Promise<PgResultLike> => {
        const text = sql(name);
        return connection.query({ name: prepared(name, text), text, values });
      };
      // The claim's name and text, looked up once: it runs for every delivery.
      const claimText = sql("claim");
      const claimName = prepared("claim", claimText);
      const claimOnce = async (values: unknown[]) =>
        (await connection.query({ name: claimName, text: claimText, values })).rows[0];
      return {
        async claim(
          key: string,
          leaseMs: number,
          ttlMs: number,
          token: string,
          fingerprint: string | undefined,
        ) {
          const values = [key, leaseMs, ttlMs, token, fingerprint ?? null];
          // No row: the claim lost a race since its snapshot (the row is live now) and wrote
          // nothing, or the row was deleted between the conflict and the update. Once more,
          // a new snapshot answers; a third run covers a reclaim racing with that one.
          return ((await claimOnce(values)) ??
            (await claimOnce(values)) ??
            (await claimOnce(values))) as SqlRow | undefined;
        },
        async complete(key: string, fencingId: number, ttlMs: number, result?: string) {
          return (await run("complete", [key, fencingId, ttlMs, result ?? null])).rows.length > 0;
        },
        async release(key: string, fencingId: number, ttlMs: number) {
          await run("release", [key, fencingId, ttlMs]);
        },
        async renew(key: string, fencingId: number, leaseMs: number, ttlMs: number) {
          return (await run("renew", [key, fencingId, leaseMs, ttlMs])).rows.length > 0;
        },
        async purgeBatch() {
          return (await run("purge", [])).rowCount ?? 0;
        },
        // Operator calls (the CLI's inspect and release).
        async inspect(key: string) {
          return (await run("inspect", [key])).rows[0] as unknown as SqlInspectRow;
        },
        async forceRelease(key: string, fencingId: number, ttlMs: number) {
          return ((await run("release", [key, fencingId, ttlMs])).rowCount ?? 0) > 0;
        },
      };
    };
    return {
      ...verbsOn(pg),
      async ensureSchema() {
        await pg.query(sql("schema"));
        // A table made by 0.1: add the columns. Read first, so an upgraded table never waits
        // for ALTER TABLE's exclusive lock (behind any open transaction on it).
        const { rows } = (await pg.query(sql("columns"))) as PgResultLike;
        if (Number(rows[0]?.missing) > 0) await pg.query(sql("upgrade"));
      },
      close() {},
      sharedConnection: !pooled,
      async begin() {
        const connection = pooled ? await pg.connect() : pg;
        // A checked-out client has no pool listener: an `error` event (the server ended the
        // connection while the body ran) would be an uncaught exception. The next query fails
        // anyway, and that failure is what the transaction reports.
        const checkedOut = pooled ? (connection as PgPoolClientLike) : undefined;
        checkedOut?.on?.("error", ignoreError);
        const end = (broken?: unknown) => {
          if (checkedOut === undefined) return;
          checkedOut.off?.("error", ignoreError);
          checkedOut.release(broken === undefined ? undefined : toError(broken));
        };
        const run = (text: string) => connection.query(text);
        const open = await beginOn(connection, run, "BEGIN", verbsOn(connection).complete, end);
        return {
          ...open,
          async commit() {
            const result = (await run("COMMIT")) as { command?: unknown } | undefined;
            // COMMIT of a transaction a failed statement aborted answers ROLLBACK, no error.
            if (result?.command === "ROLLBACK") {
              throw new Error(
                "the transaction was aborted inside the body and rolled back at COMMIT",
              );
            }
          },
        };
      },
    };
  },
};

function ignoreError(): void {}

function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}
