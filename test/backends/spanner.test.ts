// SpannerLock beyond the contract (that is spanner.contract.test.ts), on the Spanner emulator:
// the cases it shares with DatastoreLock and FirestoreLock (google-cases.ts: hostile keys, a
// lazily made client, 32 claims racing on one key from two clients, a commit whose reply was
// lost, a commit slower than its lease, round trips per verb, fingerprints and results), and its
// own: a lost reply in lockInTransaction, purgeExpired, the shipped DDL, a table made by 0.1
// upgraded in place, option checks.
import { readFileSync } from "node:fs";
import { Spanner, type Transaction } from "@google-cloud/spanner";
import { afterAll, describe, expect, it } from "vitest";
import { spreadPrefix } from "../../src/backends/google/record-ids.js";
import {
  type SpannerDatabaseLike,
  SpannerLock,
  type SpannerMutationSetLike,
  type SpannerTransactionLike,
} from "../../src/backends/spanner/index.js";
import { renderSchema } from "../../src/backends/spanner/io.js";
import { lockInTransaction } from "../../src/core/verbs/transaction.js";
import { won } from "../support/claims.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { silentLogger } from "../support/logger.js";
import { INSTANCE, spannerOrSkip } from "../support/spanner-emulator.js";
import { type AroundWrite, describeGoogleLockCases, type Instrument } from "./google-cases.js";
import { describeRecordIdCases } from "./google-record-ids.js";

const clients: Spanner[] = [];
const client = () => {
  const spanner = new Spanner({ projectId: PROJECT });
  clients.push(spanner);
  return spanner;
};
// A database for the file, with a table for the business rows of the lockInTransaction cases
// and one for the lazily made client's case (it cannot be handed a table made on demand).
const LAZY_TABLE = "records_lazy";
const store = await spannerOrSkip([
  renderSchema(LAZY_TABLE),
  "CREATE TABLE orders (id STRING(MAX) NOT NULL, total INT64) PRIMARY KEY (id)",
]);
const database = store?.database;
const databaseId = store?.databaseId ?? "";
let scopes = 0;
const freshTable = () => `records_${scopes++}`;
// Each records table is made on the first transaction of a backend over it.
const tables = new Map<string, Promise<unknown>>();
const ensureTable = (table: string): Promise<unknown> => {
  let made = tables.get(table);
  if (made === undefined) {
    made = new SpannerLock({ database: database!, table }).ensureSchema();
    tables.set(table, made);
  }
  return made;
};
afterAll(async () => {
  for (const spanner of clients) spanner.close();
  await store?.stop();
});
const passThrough: AroundWrite = (write) => write();

/**
 * The database with records table `table` made before the first call, each RPC counted (a
 * transaction's, and the single-use read and insert of a claim) and each commit passed
 * through `around`.
 */
function instrumented(
  real: SpannerDatabaseLike,
  table: string,
  { calls = new Map(), around = passThrough }: Instrument = {},
): SpannerDatabaseLike {
  const count = (method: string) => calls.set(method, (calls.get(method) ?? 0) + 1);
  return {
    async getTransaction() {
      await ensureTable(table);
      const [tx] = await real.getTransaction();
      // The driver's transaction (insert() and all), with these three watched.
      const watch: Partial<SpannerTransactionLike> = {
        run: (query) => {
          count("query");
          return tx.run(query);
        },
        commit: () => {
          count("commit");
          return around(() => tx.commit());
        },
        rollback: () => {
          count("rollback");
          return tx.rollback();
        },
      };
      const watched = new Proxy(tx, {
        get: (target, name, receiver) => {
          const own = watch[name as keyof SpannerTransactionLike];
          if (own !== undefined) return own;
          const value: unknown = Reflect.get(target, name, receiver);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      return [watched];
    },
    ...(real.run && {
      run: async (query: Parameters<NonNullable<SpannerDatabaseLike["run"]>>[0]) => {
        await ensureTable(table);
        count("query");
        return real.run!(query);
      },
    }),
    ...(real.writeAtLeastOnce && {
      writeAtLeastOnce: async (mutations: SpannerMutationSetLike) => {
        await ensureTable(table);
        count("commit");
        return around(() => real.writeAtLeastOnce!(mutations));
      },
    }),
  };
}

describe.skipIf(!store)("SpannerLock against the Spanner emulator", () => {
  const retry = { attempts: 100, maxElapsedMs: 60_000 };
  describeRecordIdCases({
    freshScope: freshTable,
    lock: (table, recordIds) =>
      new SpannerLock({ database: instrumented(database!, table), table, retry, recordIds }),
    storedIds: async (table) => {
      await ensureTable(table);
      const [rows] = await database!.run({ sql: `SELECT key FROM ${table}`, json: true });
      return (rows as { key: string }[]).map((row) => row.key);
    },
    put: async (table, id, _key, record) => {
      await ensureTable(table);
      await database!.table(table).insert({
        key: id,
        state: record.state,
        fencing_id: record.fencingId,
        lease_expires_at: record.leaseExpiresAt,
        expires_at: new Date(record.expiresAt),
        token: record.token,
      });
    },
    id: (key, layout) => (layout === "plain" ? key : spreadPrefix(key) + key),
  });
  describeGoogleLockCases({
    name: "SpannerLock (emulator)",
    label: "spanner",
    emulatorVariable: "SPANNER_EMULATOR_HOST",
    freshScope: freshTable,
    backend: (table, instrument, ttlMs) =>
      new SpannerLock({
        database: instrumented(database!, table, instrument),
        table,
        retry,
        ttlMs,
      }),
    lazyBackend: () =>
      new SpannerLock({
        projectId: PROJECT,
        instanceId: INSTANCE,
        databaseId,
        table: LAZY_TABLE,
        retry,
      }),
    separateBackend: (table) =>
      new SpannerLock({
        database: instrumented(client().instance(INSTANCE).database(databaseId), table),
        table,
        retry,
      }),
    reclaimRacers: 32,
    raceTimeoutMs: 120_000,
    // The emulator runs one read-write transaction at a time (others abort and retry): 8
    // racing callers per key take seconds a run there.
    hostileKeyRuns: 10,
    // A claim: a single-use query, then for an absent key an insert committed alone; a
    // reclaim runs the transaction after it. Every other call: a query (beginning the
    // transaction) and a commit, or a rollback.
    roundTrips: {
      // Spanner's time is read in the claim's own query: nothing to learn first.
      firstClaimWon: 2,
      claimWon: 2,
      claimHeld: 1,
      renew: 2,
      complete: 2,
      claimDone: 1,
      release: 2,
      reclaim: 3,
    },
    maxResultBytes: 2_621_440,
  });

  it("lockInTransaction: a commit whose reply was lost is not run twice over", async () => {
    const table = freshTable();
    // The claim's commit is the first; the transaction's (body and DONE) is the second.
    let commits = 0;
    const backend = new SpannerLock<Transaction>({
      database: instrumented(database!, table, {
        around: async (commit) => {
          const result = await commit();
          if (++commits === 2) {
            throw Object.assign(new Error("14 UNAVAILABLE: simulated lost commit reply"), {
              code: 14,
            });
          }
          return result;
        },
      }) as SpannerDatabaseLike<Transaction>,
      table,
      retry,
    });
    let runs = 0;
    await lockInTransaction("order-1", { backend, logger: silentLogger }, async (tx) => {
      runs++;
      tx.insert("orders", { id: `order-1`, total: 99 });
    });
    // The retry ran the body again, found DONE at its fence, and rolled its second run back.
    expect(runs).toBe(2);
    expect(commits).toBe(2); // the claim and the lost one: the rerun rolled back
    const [rows] = await database!.run({ sql: "SELECT id FROM orders", json: true });
    expect(rows).toEqual([{ id: "order-1" }]);
    expect(await backend.claim("order-1", 60_000)).toEqual({ status: "done" });
  });

  it("purgeExpired deletes what is past expires_at and nothing else", async () => {
    const table = freshTable();
    await ensureTable(table);
    const shortLived = new SpannerLock({ database: database!, table, ttlMs: 1 });
    const longLived = new SpannerLock({ database: database!, table });
    for (let i = 0; i < 3; i++) {
      expect(await shortLived.complete(won(await shortLived.claim(`old-${i}`, 60_000)))).toBe(true);
    }
    const live = won(await longLived.claim("live", 60_000));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const progress: number[] = [];
    expect(await longLived.purgeExpired({ onProgress: (n) => progress.push(n) })).toBe(3);
    expect(progress).toEqual([3]);
    expect(await longLived.inspect("old-0")).toBeUndefined();
    expect(await longLived.complete(live)).toBe(true);
    expect(await longLived.purgeExpired()).toBe(0);
  });

  it("a key's row by its primary key, with the SQL docs/backends/spanner.md gives", async () => {
    const table = freshTable();
    const backend = new SpannerLock({ database: instrumented(database!, table), table, retry });
    await backend.complete(won(await backend.claim("orders:42", 60_000)));
    const [rows] = await database!.run({
      sql: `SELECT key, state FROM ${table} WHERE key = CONCAT(SUBSTR(TO_HEX(SHA256(@key)), 1, 4), '~', @key)`,
      params: { key: "orders:42" },
      json: true,
    });
    expect(rows).toEqual([{ key: `${spreadPrefix("orders:42")}orders:42`, state: "done" }]);
  });

  it("the shipped DDL: the table with a row deletion policy on expires_at", () => {
    const ddl = new SpannerLock({ database: database!, table: "orders_idempotency" }).schemaDdl;
    expect(ddl).toMatch(/^CREATE TABLE IF NOT EXISTS `orders_idempotency` \(/);
    expect(ddl).toContain("ROW DELETION POLICY (OLDER_THAN(expires_at, INTERVAL 0 DAY))");
    expect(ddl).not.toContain("--");
  });

  it("the shipped upgrade: one ADD COLUMN IF NOT EXISTS per new nullable column", () => {
    const backend = new SpannerLock({ database: database!, table: "orders_idempotency" });
    expect(backend.upgradeDdl).toEqual([
      "ALTER TABLE `orders_idempotency` ADD COLUMN IF NOT EXISTS fingerprint STRING(MAX)",
      "ALTER TABLE `orders_idempotency` ADD COLUMN IF NOT EXISTS result STRING(MAX)",
    ]);
    expect(backend.schemaDdl).toMatch(/fingerprint STRING\(MAX\),\n\s+result STRING\(MAX\),/);
  });

  it("a table made by 0.1 gets the columns from ensureSchema() or upgradeDdl, and keeps its records", async () => {
    const before = await v01Table();
    // 0.1 wrote plain ids: read them as the upgrade does (DECISIONS.md 19).
    const backend = new SpannerLock({
      database: database!,
      table: before.table,
      recordIds: "migrating",
    });
    // Before the upgrade the table lacks the columns the read names: every call says so.
    const refused = backend.claim("old-done", 60_000);
    await expect(refused).rejects.toMatchObject({ code: "BACKEND_ERROR", verb: "claim" });
    await expect(refused).rejects.toThrow(/made by 0\.1 .* run backend\.ensureSchema\(\)/);
    await backend.ensureSchema();
    expect(await columns(before.table)).toEqual(UPGRADED_COLUMNS);
    await expectKept(backend, before.now);
    // Run again (each deploy may): nothing changes.
    await backend.ensureSchema();
    expect(await columns(before.table)).toEqual(UPGRADED_COLUMNS);
    expect(await backend.claim("new", 60_000)).toMatchObject({ result: "r:new" });
    expect(await backend.claim("old-done", 60_000)).toEqual({ status: "done" });

    // Through your own migrations: the same columns, the same records.
    const other = await v01Table();
    const migrated = new SpannerLock({
      database: database!,
      table: other.table,
      recordIds: "migrating",
    });
    const [operation] = await database!.updateSchema(migrated.upgradeDdl);
    await operation.promise();
    expect(await columns(other.table)).toEqual(UPGRADED_COLUMNS);
    await expectKept(migrated, other.now);
  });

  it("validates its options before any I/O", () => {
    expect(() => new SpannerLock({})).toThrow(/instanceId and a databaseId/);
    expect(() => new SpannerLock({ instanceId: "main" })).toThrow(/databaseId/);
    expect(() => new SpannerLock({ instanceId: "Main!", databaseId: "db" })).toThrow(/instanceId/);
    expect(() => new SpannerLock({ database: database!, table: "1x" })).toThrow(/table/);
    expect(() => new SpannerLock({ database: database!, table: "a-b" })).toThrow(/table/);
    expect(() => new SpannerLock({ database: {} as never })).toThrow(/database/);
    expect(() => new SpannerLock({ database: database!, ttlMs: 0 })).toThrow(/ttlMs/);
  });
});

/** The columns of an upgraded table (and of one made by schema.sql), in order. */
const UPGRADED_COLUMNS = [
  ["key", "STRING(MAX)", "NO"],
  ["state", "STRING(8)", "NO"],
  ["fencing_id", "INT64", "NO"],
  ["lease_expires_at", "INT64", "NO"],
  ["expires_at", "TIMESTAMP", "NO"],
  ["token", "STRING(64)", "NO"],
  ["fingerprint", "STRING(MAX)", "YES"],
  ["result", "STRING(MAX)", "YES"],
];

/** The columns of `table`: name, Spanner type, nullable. */
async function columns(table: string): Promise<string[][]> {
  const [rows] = await database!.run({
    sql:
      "SELECT COLUMN_NAME, SPANNER_TYPE, IS_NULLABLE FROM INFORMATION_SCHEMA.COLUMNS " +
      "WHERE TABLE_SCHEMA = '' AND TABLE_NAME = @table ORDER BY ORDINAL_POSITION",
    params: { table },
    json: true,
  });
  return (rows as Record<string, string>[]).map((row) => [
    row.COLUMN_NAME ?? "",
    row.SPANNER_TYPE ?? "",
    row.IS_NULLABLE ?? "",
  ]);
}

let oldTables = 0;

/**
 * A records table made with the DDL 0.1 shipped (test/backends/fixtures/schema-0.1), holding
 * what 0.1 wrote: a done record and a live claim, their times in the emulator's clock.
 */
async function v01Table(): Promise<{ table: string; now: number }> {
  const table = `records_v01_${oldTables++}`;
  const fixture = readFileSync(new URL("fixtures/schema-0.1/spanner.sql", import.meta.url), "utf8");
  const ddl = fixture.replace(/^--.*\n/gm, "").replaceAll("{{table}}", `\`${table}\``);
  const [operation] = await database!.updateSchema([ddl.trim()]);
  await operation.promise();
  expect(await columns(table)).toEqual(UPGRADED_COLUMNS.slice(0, 6));
  const now = Date.now();
  await database!.table(table).insert([
    {
      key: "old-done",
      state: "done",
      fencing_id: 1_000,
      lease_expires_at: now - 1_000,
      expires_at: new Date(now + 3_600_000),
      token: "token-done",
    },
    {
      key: "old-held",
      state: "claimed",
      fencing_id: 2_000,
      lease_expires_at: now + 600_000,
      expires_at: new Date(now + 4_200_000),
      token: "token-held",
    },
  ]);
  return { table, now };
}

/** The records 0.1 wrote read as records without the new fields; new ones keep them. */
async function expectKept(backend: SpannerLock, now: number): Promise<void> {
  expect(await backend.claim("old-done", 60_000, { fingerprint: "fp" })).toEqual({
    status: "done",
  });
  expect(await backend.claim("old-held", 60_000)).toEqual({
    status: "held",
    leaseExpiresAt: now + 600_000,
  });
  const held = await backend.inspect("old-held");
  expect(held).toMatchObject({ state: "claimed", fencingId: 2_000 });
  expect(held).not.toHaveProperty("fingerprint");
  // The claim 0.1 held completes as before.
  expect(await backend.complete({ key: "old-held", fencingId: 2_000, leaseExpiresAt: 0 })).toBe(
    true,
  );
  expect(await backend.claim("old-held", 60_000)).toEqual({ status: "done" });
  const fresh = won(await backend.claim("new", 60_000, { fingerprint: "fp-new" }));
  expect(await backend.complete(fresh, "r:new")).toBe(true);
  expect(await backend.claim("new", 60_000)).toEqual({
    status: "done",
    fingerprint: "fp-new",
    result: "r:new",
  });
}
