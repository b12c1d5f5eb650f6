/**
 * The MySQL/MariaDB dialect (mysql2/promise): autocommit prepared statements; a claim reads
 * first (a live record answers it), then writes the values it chose (insert or fenced
 * reclaim); only a write that lost a race falls back to an upsert and a read. Complete and
 * renew read back only when nothing changed. A transaction runs on a connection checked out
 * of the Pool (or on the one Connection).
 */
import {
  beginOn,
  type Dialect,
  type DialectSession,
  type SqlInspectRow,
  type SqlRow,
  type Statements,
} from "../dialect.js";
import type { SqlClient } from "../types.js";
import check from "./check.sql";
import claim from "./claim.sql";
import type { MysqlPoolConnectionLike, MysqlPoolLike, MysqlQueryable } from "./client.js";
import columns from "./columns.sql";
import complete from "./complete.sql";
import insert from "./insert.sql";
import inspect from "./inspect.sql";
import peek from "./peek.sql";
import purge from "./purge.sql";
import reclaim from "./reclaim.sql";
import release from "./release.sql";
import renew from "./renew.sql";
import schema from "./schema.sql";
import select from "./select.sql";
import upgrade from "./upgrade.sql";

type Value = string | number | Buffer | null;

/** What peek.sql returns: the server's time, and the record's columns (null when absent). */
interface PeekRow {
  now: unknown;
  now_us: unknown;
  state: unknown;
  fencing_id: unknown;
  lease_expires_at: unknown;
  expires_at: unknown;
  fingerprint: unknown;
  result: unknown;
}

/** Keys go in as bytes: the VARBINARY column compares them byte for byte. */
const bytes = (key: string): Buffer => Buffer.from(key, "utf8");

/**
 * The largest result kept: 16 MiB less 64 KiB (16,711,680 bytes). MEDIUMTEXT holds up to
 * 2^24 - 1 bytes (MySQL manual, "String Type Storage Requirements"), and a statement or row
 * must fit in max_allowed_packet, 16 MiB by default on MariaDB (64 MiB on MySQL 8): the
 * margin leaves room for the key, the fingerprint and the rest of complete's packet and of a
 * duplicate's row. A server whose max_allowed_packet is lower refuses results that exceed it.
 */
const MAX_RESULT_BYTES = 16 * 1024 * 1024 - 64 * 1024;
/** ER_DUP_FIELDNAME: another process's upgrade.sql added the column first. */
const DUPLICATE_COLUMN = 1060;

export const mysql: Dialect = {
  name: "mysql",
  detectBy: ["execute", "query"],
  needs: ["execute", "query"],
  needsHint: " (use mysql2/promise, not the callback API)",
  qualifier: "database",
  quote: (identifier) => `\`${identifier}\``,
  templates: {
    schema,
    upgrade,
    columns,
    peek,
    insert,
    reclaim,
    claim,
    select,
    check,
    complete,
    release,
    renew,
    purge,
    inspect,
  },
  maxResultBytes: MAX_RESULT_BYTES,
  // ER_BAD_FIELD_ERROR
  isUnknownColumn: (error) => (error as { errno?: unknown }).errno === 1054,
  isTransient(error) {
    const { errno } = error as { errno?: unknown };
    return errno === 1213 || errno === 1205;
  },
  open(client: SqlClient, sql: Statements): DialectSession {
    const my = client as MysqlQueryable;
    const pooled = typeof (my as Partial<MysqlPoolLike>).getConnection === "function";
    /** The verbs on one queryable: the pool (or Connection), or a connection in a transaction. */
    const verbsOn = (connection: MysqlQueryable) => {
      /** Runs a write; resolves to affectedRows. */
      const write = async (name: string, values: Value[]): Promise<number> => {
        const [result] = await connection.execute(sql(name), values);
        const affected = (result as { affectedRows?: unknown }).affectedRows;
        return typeof affected === "number" ? affected : 0;
      };
      const read = async (name: string, values: Value[]): Promise<unknown[]> => {
        const [rows] = await connection.execute(sql(name), values);
        return Array.isArray(rows) ? rows : [];
      };
      return {
        async claim(
          key: string,
          leaseMs: number,
          ttlMs: number,
          token: string,
          fingerprint: string | undefined,
        ) {
          const k = bytes(key);
          const print = fingerprint ?? null;
          const seen = (await read("peek", [k]))[0] as PeekRow | undefined;
          if (seen !== undefined) {
            const now = Number(seen.now);
            if (seen.state === null || seen.state === undefined) {
              // Absent: a new record whose fence is the read's clock in µs.
              const fence = Number(seen.now_us);
              const lease = now + leaseMs;
              if ((await write("insert", [k, fence, lease, lease + ttlMs, token, print])) === 1) {
                return { state: "claimed", fencing_id: fence, lease_expires_at: lease, token };
              }
            } else {
              const until = seen.state === "done" ? seen.expires_at : seen.lease_expires_at;
              // Live: done or held, answered by the read alone.
              if (Number(until) > now) return { ...seen, token: undefined };
              const fence = Number(seen.fencing_id);
              const lease = now + leaseMs;
              const values = [lease, lease + ttlMs, token, print, k, fence];
              if ((await write("reclaim", values)) === 1) {
                return { state: "claimed", fencing_id: fence + 1, lease_expires_at: lease, token };
              }
            }
          }
          // The record appeared or moved on since the read: the upsert decides the race.
          await write("claim", [k, leaseMs, leaseMs, ttlMs, token, print, leaseMs]);
          return (await read("select", [k]))[0] as SqlRow | undefined;
        },
        async complete(key: string, fencingId: number, ttlMs: number, result?: string) {
          const k = bytes(key);
          if ((await write("complete", [ttlMs, result ?? null, k, fencingId])) > 0) return true;
          // Without FOUND_ROWS an unchanged (already done) row counts 0: a retried complete.
          return (await read("check", [k, fencingId, "done"])).length > 0;
        },
        async release(key: string, fencingId: number, ttlMs: number) {
          await write("release", [ttlMs, bytes(key), fencingId]);
        },
        async renew(key: string, fencingId: number, leaseMs: number, ttlMs: number) {
          const k = bytes(key);
          if ((await write("renew", [leaseMs, leaseMs, ttlMs, k, fencingId])) > 0) return true;
          // A renewal within the same millisecond changes nothing; still a live claim.
          return (await read("check", [k, fencingId, "claimed"])).length > 0;
        },
        purgeBatch: () => write("purge", []),
        // Operator calls (the CLI's inspect and release).
        async inspect(key: string) {
          return (await read("inspect", [bytes(key)]))[0] as SqlInspectRow;
        },
        async forceRelease(key: string, fencingId: number, ttlMs: number) {
          return (await write("release", [ttlMs, bytes(key), fencingId])) > 0;
        },
      };
    };
    return {
      ...verbsOn(my),
      async ensureSchema() {
        await my.query(sql("schema"));
        // A table made by 0.1: add the columns. MySQL 8 has no ADD COLUMN IF NOT EXISTS, so
        // read which exist first; a race with another process's upgrade ends in a check.
        const found = async () => {
          const [rows] = await my.query(sql("columns"));
          return Array.isArray(rows) ? rows.length : 0;
        };
        if ((await found()) === 2) return;
        try {
          await my.query(sql("upgrade"));
        } catch (error) {
          const { errno } = error as { errno?: unknown };
          if (errno !== DUPLICATE_COLUMN || (await found()) !== 2) throw error;
        }
      },
      close() {},
      sharedConnection: !pooled,
      async begin() {
        const connection = pooled ? await (my as MysqlPoolLike).getConnection() : my;
        const end = (broken?: unknown) => {
          if (!pooled) return;
          const checkedOut = connection as MysqlPoolConnectionLike;
          if (broken !== undefined && typeof checkedOut.destroy === "function")
            checkedOut.destroy();
          else checkedOut.release();
        };
        const run = (text: string) => connection.query(text);
        return beginOn(connection, run, "START TRANSACTION", verbsOn(connection).complete, end);
      },
    };
  },
};
