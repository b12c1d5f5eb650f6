// SqlLock beyond the contract (that is sql.contract.test.ts), per dialect: 64 racing lock()
// calls over 10 connections, keys that a careless collation would merge, batched purges;
// configuration; statements per verb and a connection killed mid-claim (PostgreSQL,
// MariaDB); a busy SQLite database and two OS processes on one WAL file.
import { fork } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { SqlLock } from "../../src/backends/sql/index.js";
import { BackendError, InvalidConfiguration } from "../../src/core/errors.js";
import type { Claim } from "../../src/core/port.js";
import { lock } from "../../src/core/verbs/lock.js";
import { won } from "../support/claims.js";
import { silentLogger } from "../support/logger.js";
import { freshTable, openSqlStores } from "./sql-stores.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

const { postgres, mariadb, sqlite, pgPool, myPool, sqliteTarget, targets } = await openSqlStores();

/**
 * Each verb and outcome once on one key, in an order that reaches them all, each measured;
 * with `fields`, every claim gives the fingerprint and the complete stores the result.
 */
async function perVerb(
  b: SqlLock,
  measure: (run: () => Promise<unknown>) => Promise<number>,
  fields: { fingerprint?: string; result?: string } = {},
) {
  const key = fields.fingerprint === undefined ? "a" : "a-with-fields";
  const options =
    fields.fingerprint === undefined ? undefined : { fingerprint: fields.fingerprint };
  let claim = won(await b.claim(key, 60_000, options));
  return {
    held: await measure(() => b.claim(key, 60_000, options)),
    renew: await measure(() => b.renew(claim, 60_000)),
    release: await measure(() => b.release(claim)),
    claim: await measure(async () => {
      claim = won(await b.claim(key, 60_000, options));
    }),
    complete: await measure(() => b.complete(claim, fields.result)),
    duplicate: await measure(() => b.claim(key, 60_000, options)),
  };
}

/** A fingerprint and a result for perVerb: the same statements carry them. */
const FIELDS = { fingerprint: "fp-1", result: 'r:{"orderId":"o-1"}' };

/**
 * A claim of a lapsed record (so it must write) blocked behind `lockRow` on `blocker`, its
 * connection killed by `killBlocked` (which answers how many it killed, polled up to 30 s on
 * a loaded machine): it rejects with a BackendError naming the claim, and nothing is
 * half-written, so the next claim reclaims at fence + 1 and fences the first out.
 */
async function claimKilledMidWrite(
  b: SqlLock,
  blocker: { query(sql: string): Promise<unknown>; release(): void },
  lockRow: string,
  killBlocked: () => Promise<number>,
) {
  const first = won(await b.claim("victim", 50));
  await sleep(80);
  try {
    await blocker.query("BEGIN");
    await blocker.query(lockRow);
    const pending = b.claim("victim", 60_000).catch((e: unknown) => e);
    let killed = 0;
    for (let i = 0; i < 600 && killed === 0; i++) {
      await sleep(50);
      killed = await killBlocked();
    }
    expect(killed).toBe(1);
    const error = await pending;
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ backend: b.dialect, verb: "claim", key: "victim" });
  } finally {
    // Even when the test fails: an open transaction would hold the afterAll's DROP.
    await blocker.query("ROLLBACK").catch(() => {});
    blocker.release();
  }
  const next = won(await b.claim("victim", 60_000));
  expect(next.fencingId).toBe(first.fencingId + 1);
  expect(await b.complete(first)).toBe(false);
  expect(await b.complete(next)).toBe(true);
  expect(await b.claim("victim", 60_000)).toEqual({ status: "done" });
}

for (const target of targets) {
  describe(`SqlLock ${target.dialect}`, () => {
    it("64 concurrent lock() calls on one key over 10 connections admit exactly one body", async () => {
      const locks = await target.make(60_000, 10);
      const key = `race:${Math.random()}`;
      let bodies = 0;
      const results = await Promise.allSettled(
        Array.from({ length: 64 }, (_, i) =>
          lock(
            key,
            { backend: locks[i % locks.length]!, leaseMs: 60_000, logger: silentLogger },
            async () => {
              bodies++;
              await sleep(50);
            },
          ),
        ),
      );
      expect(bodies).toBe(1);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      for (const r of results) {
        if (r.status === "rejected") {
          expect(["IN_PROGRESS", "DUPLICATE"]).toContain((r.reason as { code: string }).code);
        }
      }
    });

    it("keys differing in case or trailing spaces, injection-like and 1,024-byte keys stay distinct", async () => {
      const [b] = await target.make(60_000);
      const base = `k${Math.random().toString(36).slice(2, 8)}`;
      const keys = [
        `${base}a`,
        `${base}A`,
        `${base}a `,
        `${base}a  `,
        `${base}\t`,
        `${base}'); DELETE FROM idempotency_records; --`,
        `${base}" OR 1=1 --`,
        `${base}\\x00 %_`,
        "🙂".repeat(256), // 1,024 bytes of 4-byte characters
        `${"é".repeat(511)}x${"é".repeat(0)}y`, // 1,024 bytes mixing 2- and 1-byte characters
      ];
      for (const k of keys.slice(-2)) expect(Buffer.byteLength(k)).toBe(1024);
      const claims = [];
      for (const key of keys) {
        const claim = won(await b!.claim(key, 60_000));
        expect(claim.key).toBe(key);
        claims.push(claim);
      }
      for (const claim of claims) expect(await b!.complete(claim)).toBe(true);
      for (const key of keys) expect(await b!.claim(key, 60_000)).toEqual({ status: "done" });
      expect(won(await b!.claim(`${base}b`, 60_000)).key).toBe(`${base}b`);
    });

    it("a win writes its fingerprint (none clears it) and clears the result; done and held answer them", async () => {
      const [b] = await target.make(150);
      const first = won(await b!.claim("k", 60_000, { fingerprint: "fp-a" }));
      expect(await b!.claim("k", 60_000)).toStrictEqual({
        status: "held",
        leaseExpiresAt: first.leaseExpiresAt,
        fingerprint: "fp-a",
      });
      expect(await b!.renew(first, 60_000)).toBe(true);
      expect(await b!.complete(first, "r:1")).toBe(true);
      const done = { status: "done", fingerprint: "fp-a", result: "r:1" };
      expect(await b!.claim("k", 60_000, { fingerprint: "fp-b" })).toStrictEqual(done);
      // A retried complete writes nothing, its result neither.
      expect(await b!.complete(first, "r:other")).toBe(true);
      expect(await b!.claim("k", 60_000)).toStrictEqual(done);
      expect(await b!.inspect("k")).toMatchObject({
        state: "done",
        fingerprint: "fp-a",
        result: "r:1",
      });
      // Past the ttl: a win without a fingerprint leaves neither field behind.
      await sleep(200);
      const second = won(await b!.claim("k", 60_000));
      expect(await b!.claim("k", 60_000, { fingerprint: "fp-c" })).toStrictEqual({
        status: "held",
        leaseExpiresAt: second.leaseExpiresAt,
      });
      expect(await b!.complete(second)).toBe(true);
      expect(await b!.claim("k", 60_000)).toStrictEqual({ status: "done" });
      const bare = await b!.inspect("k");
      expect(bare).not.toHaveProperty("fingerprint");
      expect(bare).not.toHaveProperty("result");
    });

    it("release keeps the fingerprint, the next win replaces it; completeInTransaction stores no result", async () => {
      const [b] = await target.make(60_000);
      const lapsing = won(await b!.claim("r", 30, { fingerprint: "fp-x" }));
      await b!.release(lapsing);
      expect(await b!.inspect("r")).toMatchObject({ state: "claimed", fingerprint: "fp-x" });
      const next = won(await b!.claim("r", 60_000, { fingerprint: "fp-y" }));
      expect(next.fencingId).toBe(lapsing.fencingId + 2);
      expect(await b!.inspect("r")).toMatchObject({ fingerprint: "fp-y" });
      const tx = await b!.completeInTransaction(next, async () => "value");
      expect(tx).toEqual({ completed: true, value: "value" });
      expect(await b!.claim("r", 60_000)).toStrictEqual({ status: "done", fingerprint: "fp-y" });
    });

    it("a result of supports.maxResultBytes is kept whole; one byte more is refused before any I/O", async () => {
      const [b] = await target.make(60_000);
      const max = b!.supports.maxResultBytes;
      expect(b!.supports).toEqual({ results: true, fingerprints: true, maxResultBytes: max });
      // The largest key and fingerprint too: the statement and the row at their largest.
      const key = "k".repeat(1024);
      const fingerprint = "f".repeat(1024);
      const result = `r:"${"é".repeat((max - 4) / 2)}"`;
      expect(Buffer.byteLength(result)).toBe(max);
      const claim = won(await b!.claim(key, 60_000, { fingerprint }));
      await expect(b!.complete(claim, `${result}x`)).rejects.toThrow(
        new RegExp(`at most ${max} UTF-8 bytes`),
      );
      await expect(b!.complete(claim, "a\u0000b")).rejects.toThrow(InvalidConfiguration);
      await expect(b!.claim(key, 60_000, { fingerprint: "" })).rejects.toThrow(
        InvalidConfiguration,
      );
      await expect(b!.claim(key, 60_000, null as never)).rejects.toThrow(InvalidConfiguration);
      expect(await b!.complete(claim, result)).toBe(true);
      const done = await b!.claim(key, 60_000);
      expect(done).toMatchObject({ status: "done", fingerprint });
      expect((done as { result?: string }).result === result).toBe(true);
    }, 60_000);

    it("purgeExpired deletes in batches and counts every row", async () => {
      const [b] = await target.make(1);
      const claims: Claim[] = [];
      for (let i = 0; i < 1205; i++) claims.push(won(await b!.claim(`purge:${i}`, 1)));
      await sleep(20);
      expect(await b!.purgeExpired()).toBe(1205);
      expect(await b!.purgeExpired()).toBe(0);
    }, 60_000);
  });
}

describe("SqlLock configuration", () => {
  it("detects the dialect and does no I/O when constructed", () => {
    const pgLike = { query: () => Promise.reject(new Error("no I/O")) };
    const myLike = {
      query: () => Promise.reject(new Error("x")),
      execute: () => Promise.reject(new Error("x")),
    };
    expect(new SqlLock({ client: pgLike as never }).dialect).toBe("postgres");
    expect(new SqlLock({ client: myLike as never }).dialect).toBe("mysql");
    const db = sqlite.open("detect.db");
    expect(new SqlLock({ client: db }).dialect).toBe("sqlite");
  });

  it("rejects bad table names, ttl and clients with InvalidConfiguration", () => {
    const db = sqlite.open("config.db");
    for (const table of ["", "1abc", "a-b", 'x"; DROP TABLE y; --', "a b", "a.b", "x".repeat(49)]) {
      expect(() => new SqlLock({ client: db, table })).toThrow(InvalidConfiguration);
    }
    const pgLike = { query: () => Promise.reject(new Error("x")) };
    expect(new SqlLock({ client: pgLike as never, table: "public.records" }).table).toBe(
      "public.records",
    );
    expect(() => new SqlLock({ client: pgLike as never, table: "a.b.c" })).toThrow(
      InvalidConfiguration,
    );
    expect(() => new SqlLock({ client: pgLike as never, table: "a.1b" })).toThrow(
      /option table .*optionally "schema\.table", got "a\.1b"/,
    );
    expect(() => new SqlLock({ client: db, table: "a.b" })).toThrow(/option table/);
    expect(() => new SqlLock({ client: db, ttlMs: 0 })).toThrow(InvalidConfiguration);
    expect(() => new SqlLock({ client: {} as never })).toThrow(/dialect/);
    expect(() => new SqlLock({ client: pgLike as never, dialect: "sqlite" })).toThrow(/prepare/);
  });

  it("MySQL takes database.table: each part validated and quoted with backticks", () => {
    const myLike = {
      query: () => Promise.reject(new Error("no I/O")),
      execute: () => Promise.reject(new Error("no I/O")),
    };
    const backend = new SqlLock({ client: myLike as never, table: "app_db.records" });
    expect(backend.table).toBe("app_db.records");
    expect(backend.schemaSql).toContain("CREATE TABLE IF NOT EXISTS `app_db`.`records` (");
    // The index is the table's own: named after the table alone.
    expect(backend.schemaSql).toContain("INDEX `records_expires_at_idx` (expires_at)");
    for (const table of ["a.b.c", "app.", ".records", "app.1abc", "app`.x", "a b.c"]) {
      expect(() => new SqlLock({ client: myLike as never, table })).toThrow(
        /SqlLock option table .*optionally "database\.table"/,
      );
    }
  });

  it("a driver error rejects with a BackendError naming dialect, verb and key", async () => {
    const b = new SqlLock({ client: sqlite.open("no-table.db"), table: "missing" });
    const error = await b.claim("k1", 1000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ backend: "sqlite", verb: "claim", key: "k1" });
  });
});

describe.skipIf(!postgres)("SqlLock postgres: round trips and failures", () => {
  it("claim, complete, release, renew, duplicate and held are one named statement each", async () => {
    const sent: Array<{ name?: string }> = [];
    const counting = {
      query: (config: { name: string; text: string; values: unknown[] }) => {
        sent.push(config);
        return pgPool!.query(config);
      },
    };
    const b = new SqlLock({ client: counting as never, dialect: "postgres", table: freshTable() });
    await new SqlLock({ client: pgPool!, table: b.table }).ensureSchema();
    const count = async (run: () => Promise<unknown>) => {
      sent.length = 0;
      await run();
      expect(sent.every((q) => typeof q.name === "string" && q.name.startsWith("gpi_"))).toBe(true);
      return sent.length;
    };
    const counts = await perVerb(b, count);
    console.info(`[sql tests] postgres statements per verb: ${JSON.stringify(counts)}`);
    expect(counts).toEqual({ held: 1, renew: 1, release: 1, claim: 1, complete: 1, duplicate: 1 });
    // A fingerprint and a result ride in the same statements.
    expect(await perVerb(b, count, FIELDS)).toEqual(counts);
  });

  it("a claim that loses a race after its snapshot writes nothing and answers held from a second statement", async () => {
    const table = freshTable();
    const b = new SqlLock({ client: pgPool!, table });
    await b.ensureSchema();
    const sent: string[] = [];
    const counting = {
      query: (config: { name: string; text: string; values: unknown[] }) => {
        sent.push(config.name);
        return pgPool!.query(config);
      },
    };
    const loser = new SqlLock({ client: counting as never, dialect: "postgres", table });
    // Another transaction inserts a live claim and holds it uncommitted: the loser's snapshot
    // misses it, its INSERT waits on it, then meets the committed, live row.
    const rival = await pgPool!.connect();
    try {
      await rival.query("BEGIN");
      await rival.query(
        `INSERT INTO "${table}" ("key", state, fencing_id, lease_expires_at, expires_at, token)
         VALUES ('race', 'claimed', 7, 9e15, 9e15, 'rival')`,
      );
      const rivalXmin = (await rival.query(`SELECT xmin::text AS x FROM "${table}"`)).rows[0].x;
      const claiming = loser.claim("race", 60_000);
      await waitForLockWait(pgPool!);
      await rival.query("COMMIT");
      expect(await claiming).toEqual({ status: "held", leaseExpiresAt: 9e15 });
      // The rival's row version, untouched: the loser neither rewrote nor bumped it.
      const row = await pgPool!.query(`SELECT fencing_id, token, xmin::text AS x FROM "${table}"`);
      expect(row.rows).toEqual([{ fencing_id: "7", token: "rival", x: rivalXmin }]);
    } finally {
      rival.release();
    }
    expect(sent).toHaveLength(2);
  });

  it("works over a single pg Client too, and exposes its DDL", async () => {
    const client = new pg.Client({ connectionString: postgres!.url });
    await client.connect();
    try {
      const b = new SqlLock({ client, table: `public.${freshTable()}` });
      expect(b.dialect).toBe("postgres");
      expect(b.schemaSql).toContain(`CREATE TABLE IF NOT EXISTS "public"."${b.table.slice(7)}"`);
      await b.ensureSchema();
      await b.ensureSchema(); // idempotent
      const claim = won(await b.claim("c", 60_000));
      expect(await b.renew(claim, 60_000)).toBe(true);
      expect(await b.complete(claim)).toBe(true);
      expect(await b.claim("c", 60_000)).toEqual({ status: "done" });
    } finally {
      await client.end();
    }
  });

  it("a connection terminated mid-claim rejects with BackendError; the next claim is sane", async () => {
    const b = new SqlLock({ client: pgPool!, table: freshTable() });
    await b.ensureSchema();
    const blocker = await pgPool!.connect();
    await claimKilledMidWrite(
      b,
      blocker,
      `SELECT 1 FROM "${b.table}" WHERE key = 'victim' FOR UPDATE`,
      async () => {
        const r = await blocker.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`,
        );
        return r.rowCount ?? 0;
      },
    );
  });
});

/**
 * Until a backend of this database waits on a lock, up to 10 s. Asked on connections of
 * `pool` outside any transaction: inside one, pg_stat_activity keeps its first snapshot.
 */
async function waitForLockWait(pool: pg.Pool): Promise<void> {
  for (let tries = 0; tries < 1000; tries++) {
    const { rowCount } = await pool.query(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
       AND wait_event_type = 'Lock'`,
    );
    if ((rowCount ?? 0) > 0) return;
    await new Promise((done) => setTimeout(done, 10));
  }
  throw new Error("no backend came to wait on the lock");
}

/** Which of the MySQL claim's statements `sql` is, told by a phrase only it contains. */
function statementName(sql: string): string {
  const phrases: Array<[string, string]> = [
    ["peek", "AS now_us"],
    ["insert", "INSERT IGNORE"],
    ["reclaim", "lease_expires_at = ?,"],
    ["upsert", "ON DUPLICATE KEY UPDATE"],
    ["select", "SELECT state, fencing_id, lease_expires_at, token, fingerprint, result FROM"],
  ];
  return phrases.find(([, phrase]) => sql.includes(phrase))?.[0] ?? "other";
}

describe.skipIf(!mariadb)("SqlLock mysql: round trips and failures", () => {
  it("counts statements per verb", async () => {
    let sent = 0;
    const counting = {
      execute: (sql: string, values: Array<string | number | Buffer | null>) => {
        sent++;
        return myPool!.execute(sql, values);
      },
      query: (sql: string) => myPool!.query(sql),
    };
    const b = new SqlLock({ client: counting as never, table: freshTable() });
    await b.ensureSchema();
    const count = async (run: () => Promise<unknown>) => {
      sent = 0;
      await run();
      return sent;
    };
    const counts = await perVerb(b, count);
    console.info(`[sql tests] mysql statements per verb: ${JSON.stringify(counts)}`);
    // A live record is answered by the read alone; a claim is that read plus one write.
    expect(counts).toEqual({ held: 1, renew: 1, release: 1, claim: 2, complete: 1, duplicate: 1 });
    // A fingerprint and a result ride in the same statements.
    expect(await perVerb(b, count, FIELDS)).toEqual(counts);
  });

  it("a record that appears or moves on between the read and the write: the upsert decides", async () => {
    const table = freshTable();
    const rival = new SqlLock({ client: myPool!, table });
    await rival.ensureSchema();
    // After each peek, the rival claims the same key first, as a racing process would.
    const sent: string[] = [];
    const racing = {
      execute: async (sql: string, values: Array<string | number | Buffer | null>) => {
        const name = statementName(sql);
        sent.push(name);
        const result = await myPool!.execute(sql, values);
        if (name === "peek") rivalWon = won(await rival.claim(String(values[0]), 60_000));
        return result;
      },
      query: (sql: string) => myPool!.query(sql),
    };
    let rivalWon: Claim | undefined;
    const b = new SqlLock({ client: racing as never, table });
    // Absent at the read, then the rival inserts: our insert changes nothing.
    expect(await b.claim("raced", 60_000)).toEqual({
      status: "held",
      leaseExpiresAt: rivalWon!.leaseExpiresAt,
    });
    expect(sent).toEqual(["peek", "insert", "upsert", "select"]);
    // Lapsed at the read, then the rival reclaims it: our fenced reclaim changes nothing.
    const lapsed = won(await rival.claim("lapsed", 30));
    await sleep(60);
    sent.length = 0;
    expect(await b.claim("lapsed", 60_000)).toEqual({
      status: "held",
      leaseExpiresAt: rivalWon!.leaseExpiresAt,
    });
    expect(rivalWon!.fencingId).toBe(lapsed.fencingId + 1);
    expect(sent).toEqual(["peek", "reclaim", "upsert", "select"]);
  });

  it("a connection killed mid-claim rejects with BackendError; the next claim is sane", async () => {
    const { admin, database } = mariadb!;
    const b = new SqlLock({ client: myPool!, table: freshTable() });
    await b.ensureSchema();
    const blocker = await myPool!.getConnection();
    await claimKilledMidWrite(
      b,
      blocker,
      `SELECT 1 FROM \`${b.table}\` WHERE \`key\` = 'victim' FOR UPDATE`,
      async () => {
        const [rows] = await admin.query(
          `SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND INFO LIKE '%lease_expires_at = _,%'`,
          [database],
        );
        for (const row of rows as Array<{ ID: number }>)
          await admin.query(`KILL ${Number(row.ID)}`);
        return (rows as unknown[]).length;
      },
    );
  });
});

describe("SqlLock sqlite: busy database", () => {
  it("a claim that meets SQLITE_BUSY retries with backoff, then gives up with a BackendError", async () => {
    const [b0] = await sqliteTarget.make(60_000);
    const file = `${b0!.table}.db`;
    const db = sqlite.open(file);
    db.pragma("busy_timeout = 1"); // kept as set: SqlLock only fills in a missing timeout
    const blocker = sqlite.open(file);
    // The blocker lets go when the claim has met SQLITE_BUSY once, whatever the timing: the
    // retry then succeeds (a timer of a few ms could fire after every jittered retry ran).
    let letGo = false;
    const busyOnce = (error: unknown) => {
      if (!letGo && String((error as { code?: unknown }).code).startsWith("SQLITE_BUSY")) {
        letGo = true;
        blocker.exec("COMMIT");
      }
      throw error;
    };
    const watched = new Proxy(db, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (name !== "prepare" || typeof value !== "function") return value;
        return (sql: string) => {
          const statement = (value as (sql: string) => object).call(target, sql);
          return new Proxy(statement, {
            get(st, method, r) {
              const fn = Reflect.get(st, method, r) as unknown;
              if (typeof fn !== "function") return fn;
              return (...args: unknown[]) => {
                try {
                  return (fn as (...a: unknown[]) => unknown).apply(st, args);
                } catch (error) {
                  return busyOnce(error);
                }
              };
            },
          });
        };
      },
    });
    const b = new SqlLock({ client: watched, table: b0!.table });
    blocker.exec("BEGIN IMMEDIATE");
    expect(won(await b.claim("busy", 60_000)).key).toBe("busy");
    expect(letGo).toBe(true);
    blocker.exec("BEGIN IMMEDIATE");
    const error = await b.claim("busy2", 60_000).catch((e: unknown) => e);
    blocker.exec("ROLLBACK");
    expect(error).toBeInstanceOf(BackendError);
    expect((error as BackendError).cause).toMatchObject({
      code: expect.stringMatching(/^SQLITE_BUSY/),
    });
    expect(won(await b.claim("busy2", 60_000)).key).toBe("busy2");
  });

  it("a duplicate or contended claim answers while another process holds the write lock", async () => {
    const [b0] = await sqliteTarget.make(60_000);
    const file = `${b0!.table}.db`;
    const db = sqlite.open(file);
    db.pragma("busy_timeout = 1");
    const b = new SqlLock({ client: db, table: b0!.table });
    expect(await b.complete(won(await b.claim("done", 60_000)))).toBe(true);
    won(await b.claim("held", 60_000));
    const blocker = sqlite.open(file);
    blocker.exec("BEGIN IMMEDIATE");
    try {
      // Neither answer needs to write, so neither waits for (or fails on) the writer.
      expect(await b.claim("done", 60_000)).toEqual({ status: "done" });
      expect(await b.claim("held", 60_000)).toMatchObject({ status: "held" });
      const error = await b.claim("absent", 60_000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BackendError);
    } finally {
      blocker.exec("ROLLBACK");
    }
  });
});

describe("SqlLock sqlite: two OS processes on one WAL file", () => {
  it("admit exactly one winner per key", async () => {
    const [b] = await sqliteTarget.make(60_000);
    const file = join(sqlite.dir, `${b!.table}.db`);
    const keys = Array.from({ length: 2000 }, (_, i) => `proc:${i}`);
    const children = [0, 1].map(() =>
      fork(join(here, "../support/sqlite-child.ts"), [file, b!.table, "0"], {
        execArgv: ["--import", "tsx", "--import", join(here, "../../scripts/text-loader.mjs")],
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      }),
    );
    const ready = children.map(
      (child) =>
        new Promise<void>((done, fail) => {
          child.once("message", () => done());
          child.once("exit", (code) => fail(new Error(`child exited early with ${code}`)));
        }),
    );
    await Promise.all(ready);
    const results = children.map(
      (child) =>
        new Promise<string[]>((done) => {
          child.once("message", (m) => done((m as { statuses: string[] }).statuses));
        }),
    );
    const startAt = Date.now() + 200;
    for (const child of children) child.send({ keys, startAt });
    const [one, two] = await Promise.all(results);
    let winsOne = 0;
    for (let i = 0; i < keys.length; i++) {
      const pair = [one![i], two![i]].sort();
      expect(pair).toEqual(["held", "won"]);
      if (one![i] === "won") winsOne++;
    }
    console.info(`[sql tests] sqlite processes: ${winsOne}/${keys.length} keys won by the first`);
  }, 60_000);
});
