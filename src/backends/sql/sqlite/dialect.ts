/**
 * The SQLite dialect (better-sqlite3): statements prepared once per lock; a claim reads
 * first and writes only when no live record answers it. A transaction is BEGIN IMMEDIATE …
 * COMMIT on the one connection.
 */
import type { Dialect, DialectSession, SqlInspectRow, SqlRow, Statements } from "../dialect.js";
import type { SqlClient } from "../types.js";
import claim from "./claim.sql";
import type { SqliteDatabaseLike, SqliteStatementLike } from "./client.js";
import columns from "./columns.sql";
import complete from "./complete.sql";
import inspect from "./inspect.sql";
import peek from "./peek.sql";
import purge from "./purge.sql";
import release from "./release.sql";
import renew from "./renew.sql";
import schema from "./schema.sql";
import upgrade from "./upgrade.sql";

/** busy_timeout set on a SQLite connection that has none, so BEGIN IMMEDIATE waits. */
const SQLITE_BUSY_MS = 5000;
/**
 * The largest result kept: 16 MiB. SQLite's own bound on a string is SQLITE_MAX_LENGTH,
 * 1,000,000,000 bytes by default ("Limits In SQLite"), but every duplicate reads the
 * record's result back into one JS string; 16 MiB bounds that, as on the other dialects.
 */
const MAX_RESULT_BYTES = 16 * 1024 * 1024;

export const sqlite: Dialect = {
  name: "sqlite",
  detectBy: ["prepare", "pragma"],
  needs: ["prepare", "exec", "pragma"],
  needsHint: "",
  qualifier: undefined,
  quote: (identifier) => `"${identifier}"`,
  templates: { schema, upgrade, columns, peek, claim, complete, release, renew, purge, inspect },
  maxResultBytes: MAX_RESULT_BYTES,
  isUnknownColumn: (error) =>
    /^(no such column|table \S+ has no column named)/.test(String((error as Error).message)),
  isTransient(error) {
    const { code } = error as { code?: unknown };
    return typeof code === "string" && code.startsWith("SQLITE_BUSY");
  },
  open(client: SqlClient, sql: Statements): DialectSession {
    const db = client as SqliteDatabaseLike;
    const statements = new Map<string, SqliteStatementLike>();
    let ready = false;
    const prepareConnection = (): void => {
      if (ready) return;
      // Without a busy timeout a second writer fails at once instead of waiting its turn.
      if (db.pragma("busy_timeout", { simple: true }) === 0) {
        db.pragma(`busy_timeout = ${SQLITE_BUSY_MS}`);
      }
      ready = true;
    };
    /** A statement prepared once: a template by name, or (`literal`) the text itself. */
    const statement = (name: string, literal = false): SqliteStatementLike => {
      prepareConnection();
      let prepared = statements.get(name);
      if (prepared === undefined) {
        prepared = db.prepare(literal ? name : sql(name));
        statements.set(name, prepared);
      }
      return prepared;
    };
    const complete = async (
      key: string,
      fence: number,
      ttl: number,
      result?: string,
    ): Promise<boolean> =>
      statement("complete").run({ key, fence, ttl, result: result ?? null }).changes > 0;
    /** How many of upgrade.sql's columns the table lacks; not kept prepared (a DDL check). */
    const missing = (): number =>
      Number((db.prepare(sql("columns")).get() as { missing?: unknown } | undefined)?.missing);
    return {
      async ensureSchema() {
        // WAL lets several processes share the file; an in-memory database has no journal.
        if (db.memory !== true) db.pragma("journal_mode = WAL");
        prepareConnection();
        db.exec(sql("schema"));
        if (missing() === 0) return;
        // A table made by 0.1: add the columns, checked again under the write lock, so two
        // processes upgrading one file never both run the ALTERs.
        statement("BEGIN IMMEDIATE", true).run();
        try {
          if (missing() > 0) db.exec(sql("upgrade"));
          statement("COMMIT", true).run();
        } catch (error) {
          if (db.inTransaction !== false) statement("ROLLBACK", true).run();
          throw error;
        }
      },
      async claim(key, lease, ttl, token, fingerprint) {
        return (statement("peek").get({ key }) ??
          statement("claim").get({ key, lease, ttl, token, fingerprint: fingerprint ?? null })) as
          | SqlRow
          | undefined;
      },
      complete,
      async release(key, fence, ttl) {
        statement("release").run({ key, fence, ttl });
      },
      async renew(key, fence, lease, ttl) {
        return statement("renew").run({ key, fence, lease, ttl }).changes > 0;
      },
      async purgeBatch() {
        return statement("purge").run().changes;
      },
      close() {
        statements.clear();
      },
      // One connection: SqlLock keeps its statements out while a transaction is open.
      sharedConnection: true,
      async begin() {
        // IMMEDIATE takes the write lock now (waiting out busy_timeout), so no write of the
        // body can meet SQLITE_BUSY_SNAPSHOT halfway through.
        statement("BEGIN IMMEDIATE", true).run();
        return {
          tx: db,
          async complete(key, fence, ttl) {
            if (db.inTransaction === false) {
              throw new Error(
                "the transaction ended inside the body (its own COMMIT or ROLLBACK, or an error that rolled it back)",
              );
            }
            return complete(key, fence, ttl);
          },
          async commit() {
            statement("COMMIT", true).run();
          },
          async rollback() {
            if (db.inTransaction !== false) statement("ROLLBACK", true).run();
          },
          end() {},
        };
      },
      // Operator calls (the CLI's inspect and release).
      async inspect(key) {
        return statement("inspect").get({ key }) as SqlInspectRow;
      },
      async forceRelease(key, fence, ttl) {
        return statement("release").run({ key, fence, ttl }).changes > 0;
      },
    };
  },
};
