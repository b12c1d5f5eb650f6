// SqlLock over a table made by 0.1 (fixtures/schema-0.1: each dialect's schema.sql at e21bff9),
// on PostgreSQL, MariaDB (the mysql dialect) and SQLite: ensureSchema() adds the fingerprint
// and result columns, and only when they are missing; the records written before stay what
// they were; upgradeSql applied by hand does the same; concurrent upgrades all succeed; a
// table not upgraded fails saying what to run.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type SqlClient, type SqlDialect, SqlLock } from "../../src/backends/sql/index.js";
import { BackendError, Duplicate } from "../../src/core/errors.js";
import { once } from "../../src/core/verbs/once.js";
import { won } from "../support/claims.js";
import { silentLogger } from "../support/logger.js";
import { freshTable, openSqlStores } from "./sql-stores.js";

const { pgPool, myPool, sqlite } = await openSqlStores();

/** A 0.1 table's statements: the fixture with the table and index names filled in. */
function oldSchema(dialect: SqlDialect, table: string): string {
  const quote = dialect === "mysql" ? (s: string) => `\`${s}\`` : (s: string) => `"${s}"`;
  const fixture = new URL(`./fixtures/schema-0.1/${dialect}.sql`, import.meta.url);
  return readFileSync(fileURLToPath(fixture), "utf8")
    .replaceAll("{{table}}", quote(table))
    .replaceAll("{{index}}", quote(`${table}_expires_at_idx`));
}

/** One dialect's store: a client per table, and raw SQL beside SqlLock. */
interface Store {
  dialect: SqlDialect;
  /** The client SqlLock gets for `table` (SQLite: a connection to the table's own file). */
  client(table: string): SqlClient;
  /** Run SQL text (several statements on PostgreSQL and SQLite). */
  exec(table: string, text: string): Promise<void>;
  /** Insert a record with 0.1's columns only. */
  insert(table: string, key: string, state: string, lease: number, expires: number): Promise<void>;
  /** The fingerprint and result columns as the catalog describes them, sorted. */
  newColumns(table: string): Promise<string[]>;
}

const stores: Store[] = [];
const INSERT_OLD = (table: string, q: string, p: (i: number) => string) =>
  `INSERT INTO ${q}${table}${q} (${q}key${q}, state, fencing_id, lease_expires_at, expires_at, token) ` +
  `VALUES (${p(1)}, ${p(2)}, 7, ${p(3)}, ${p(4)}, 'token-0.1')`;

if (pgPool) {
  stores.push({
    dialect: "postgres",
    client: () => pgPool,
    exec: async (_table, text) => {
      await pgPool.query(text);
    },
    insert: async (table, key, state, lease, expires) => {
      await pgPool.query(
        INSERT_OLD(table, '"', (i) => `$${i}`),
        [key, state, lease, expires],
      );
    },
    newColumns: async (table) => {
      const { rows } = await pgPool.query(
        `SELECT column_name || ' ' || data_type || ' ' || is_nullable AS d FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name = $1 AND column_name IN ('fingerprint', 'result')
         ORDER BY column_name`,
        [table],
      );
      return rows.map((row) => row.d as string);
    },
  });
}

if (myPool) {
  stores.push({
    dialect: "mysql",
    client: () => myPool,
    exec: async (_table, text) => {
      await myPool.query(text);
    },
    insert: async (table, key, state, lease, expires) => {
      await myPool.execute(
        INSERT_OLD(table, "`", () => "?"),
        [key, state, lease, expires],
      );
    },
    newColumns: async (table) => {
      const [rows] = await myPool.query(
        `SELECT CONCAT_WS(' ', COLUMN_NAME, COLUMN_TYPE, CHARACTER_SET_NAME, COLLATION_NAME, IS_NULLABLE) AS d
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?
           AND COLUMN_NAME IN ('fingerprint', 'result') ORDER BY COLUMN_NAME`,
        [table],
      );
      return (rows as Array<{ d: string }>).map((row) => row.d);
    },
  });
}

/** SQLite: a file per table, and a connection per call of client(). */
const sqliteDb = (table: string) => sqlite.open(`${table}.db`);
stores.push({
  dialect: "sqlite",
  client: sqliteDb,
  exec: async (table, text) => {
    sqliteDb(table).exec(text);
  },
  insert: async (table, key, state, lease, expires) => {
    sqliteDb(table)
      .prepare(INSERT_OLD(table, '"', () => "?"))
      .run(key, state, lease, expires);
  },
  newColumns: async (table) =>
    (
      sqliteDb(table)
        .prepare(
          `SELECT name || ' ' || type || ' ' || "notnull" AS d FROM pragma_table_info('${table}')
           WHERE name IN ('fingerprint', 'result') ORDER BY name`,
        )
        .all() as Array<{ d: string }>
    ).map((row) => row.d),
});

/** `client` with every SQL text it is sent (query, execute, exec, prepare) recorded in `sent`. */
function recorded(client: SqlClient, sent: string[]): SqlClient {
  return new Proxy(client, {
    get(target, name) {
      const value = Reflect.get(target, name, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (["query", "execute", "exec", "prepare"].includes(String(name))) {
          const first = args[0];
          sent.push(typeof first === "string" ? first : String((first as { text?: unknown }).text));
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** A 0.1 table (on MySQL with latin1 as its default character set, as older servers made it). */
async function oldTable(store: Store): Promise<string> {
  const table = freshTable();
  let ddl = oldSchema(store.dialect, table);
  if (store.dialect === "mysql")
    ddl = ddl.replace(/ENGINE = InnoDB\s*$/, "$& DEFAULT CHARSET = latin1");
  await store.exec(table, ddl);
  return table;
}

const alters = (sent: string[]) => sent.filter((text) => /ALTER TABLE/i.test(text)).length;

for (const store of stores) {
  describe(`SqlLock ${store.dialect} over a table made by 0.1`, () => {
    it("ensureSchema() adds the columns; the old records stay duplicates and held; the new fields work", async () => {
      const table = await oldTable(store);
      const now = Date.now();
      await store.insert(table, "old-done", "done", now - 1_000, now + 3_600_000);
      await store.insert(table, "old-held", "claimed", now + 60_000, now + 3_660_000);
      const sent: string[] = [];
      const backend = new SqlLock({ client: recorded(store.client(table), sent), table });
      await backend.ensureSchema();
      expect(alters(sent)).toBe(1);

      // Written before the upgrade: answered exactly as 0.1 answered them.
      const done = await backend.claim("old-done", 60_000, { fingerprint: "fp-new" });
      expect(done).toStrictEqual({ status: "done" });
      expect(await backend.claim("old-held", 60_000)).toStrictEqual({
        status: "held",
        leaseExpiresAt: now + 60_000,
      });
      const error = await once("old-done", { backend, logger: silentLogger }, async () => 1).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(Duplicate);
      const inspected = await backend.inspect("old-done");
      expect(inspected).toMatchObject({ state: "done", fencingId: 7 });
      expect(inspected).not.toHaveProperty("fingerprint");
      expect(inspected).not.toHaveProperty("result");

      // The new fields, with text a latin1 column would mangle.
      const claim = won(await backend.claim("new", 60_000, { fingerprint: "fp-😀-中" }));
      expect(await backend.claim("new", 60_000)).toMatchObject({
        status: "held",
        fingerprint: "fp-😀-中",
      });
      expect(await backend.complete(claim, 'r:{"id":"é😀"}')).toBe(true);
      expect(await backend.claim("new", 60_000)).toStrictEqual({
        status: "done",
        fingerprint: "fp-😀-中",
        result: 'r:{"id":"é😀"}',
      });
      expect(await backend.inspect("new")).toMatchObject({
        fingerprint: "fp-😀-中",
        result: 'r:{"id":"é😀"}',
      });
      expect(
        await once("once-new", { backend, logger: silentLogger }, async () => [1, "a"]),
      ).toEqual([1, "a"]);
      expect(await once("once-new", { backend, logger: silentLogger }, async () => 2)).toEqual([
        1,
        "a",
      ]);

      // As a fresh table has them; and a second ensureSchema() only reads.
      const freshName = freshTable();
      await new SqlLock({ client: store.client(freshName), table: freshName }).ensureSchema();
      expect(await store.newColumns(table)).toEqual(await store.newColumns(freshName));
      expect(await store.newColumns(table)).toHaveLength(2);
      sent.length = 0;
      await backend.ensureSchema();
      expect(alters(sent)).toBe(0);
    });

    it("upgradeSql applied by hand upgrades a 0.1 table; ensureSchema() after it changes nothing", async () => {
      const table = await oldTable(store);
      const now = Date.now();
      await store.insert(table, "old-done", "done", now - 1_000, now + 3_600_000);
      const backend = new SqlLock({ client: store.client(table), table });
      expect(backend.upgradeSql).toMatch(
        /^-- Upgrade a .* table made by gcp-pubsub-idempotency 0\.1/,
      );
      expect(backend.upgradeSql).not.toContain("{{");
      await store.exec(table, backend.upgradeSql);
      // No ensureSchema(): the statements find their columns.
      expect(await backend.claim("old-done", 60_000)).toStrictEqual({ status: "done" });
      const claim = won(await backend.claim("k", 60_000, { fingerprint: "f" }));
      expect(await backend.complete(claim, "r:1")).toBe(true);
      expect(await backend.claim("k", 60_000)).toStrictEqual({
        status: "done",
        fingerprint: "f",
        result: "r:1",
      });
      const sent: string[] = [];
      await new SqlLock({ client: recorded(store.client(table), sent), table }).ensureSchema();
      expect(alters(sent)).toBe(0);
      // Run twice by hand: PostgreSQL's IF NOT EXISTS makes it a no-op; the others refuse.
      const again = store.exec(table, backend.upgradeSql);
      if (store.dialect === "postgres") await again;
      else await expect(again).rejects.toThrow(/duplicate column/i);
    });

    it("not upgraded: claim and inspect reject with a BackendError saying what to run", async () => {
      const table = await oldTable(store);
      const backend = new SqlLock({ client: store.client(table), table });
      for (const call of [() => backend.claim("k", 60_000), () => backend.inspect("k")]) {
        const error = await call().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(BackendError);
        expect((error as Error).message).toMatch(
          /lacks the fingerprint and result columns .*run ensureSchema\(\) or apply upgradeSql/,
        );
      }
    });

    it("concurrent ensureSchema() calls on one 0.1 table all succeed", async () => {
      const table = await oldTable(store);
      const backends = Array.from(
        { length: 4 },
        () => new SqlLock({ client: store.client(table), table }),
      );
      await Promise.all(backends.map((b) => b.ensureSchema()));
      expect(await store.newColumns(table)).toHaveLength(2);
      const claim = won(await backends[0]!.claim("k", 60_000, { fingerprint: "f" }));
      expect(await backends[1]!.complete(claim, "r:2")).toBe(true);
      expect(await backends[2]!.claim("k", 60_000)).toMatchObject({ result: "r:2" });
    });
  });
}
