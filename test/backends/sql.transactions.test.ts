// lockInTransaction on SqlLock beyond the contract: the tx type per driver; a connection killed
// inside the body (PostgreSQL, MariaDB) and a constraint checked at COMMIT (PostgreSQL) land
// neither and free the key; the record table beside the user's (a schema on PostgreSQL); one
// connection shared safely (SQLite, a pg Client): bodies and claims never interleave on it.
import type Database from "better-sqlite3";
import type mysql from "mysql2/promise";
import pg from "pg";
import { describe, expect, expectTypeOf, it } from "vitest";
import { SqlLock, type SqlTransaction } from "../../src/backends/sql/index.js";
import { BackendError } from "../../src/core/errors.js";
import { lock, lockInTransaction, type TransactionOf } from "../../src/index.js";
import { won } from "../support/claims.js";
import { captureLogger, silentLogger } from "../support/logger.js";
import { freshTable, openSqlStores } from "./sql-stores.js";

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
const { postgres, mariadb, sqlite, pgPool, myPool } = await openSqlStores();

describe("SqlLock transaction types", () => {
  it("hands the body the driver's own connection type", () => {
    expectTypeOf<SqlTransaction<pg.Pool>>().toEqualTypeOf<pg.PoolClient>();
    expectTypeOf<SqlTransaction<pg.Client>>().toEqualTypeOf<pg.Client>();
    expectTypeOf<SqlTransaction<mysql.Pool>>().toEqualTypeOf<mysql.PoolConnection>();
    expectTypeOf<SqlTransaction<mysql.Connection>>().toEqualTypeOf<mysql.Connection>();
    expectTypeOf<SqlTransaction<Database.Database>>().toEqualTypeOf<Database.Database>();
    const backend = new SqlLock({ client: new pg.Pool() });
    expectTypeOf<TransactionOf<typeof backend>>().toEqualTypeOf<pg.PoolClient>();
    // lockInTransaction infers tx from the backend: no annotation needed.
    const run = () =>
      lockInTransaction("k", { backend }, async (tx) => {
        expectTypeOf(tx).toEqualTypeOf<pg.PoolClient>();
        return (await tx.query<{ n: number }>("SELECT 1 AS n")).rows[0]?.n;
      });
    expectTypeOf(run).returns.resolves.toEqualTypeOf<number | undefined>();
  });
});

describe.skipIf(!postgres)("SqlLock postgres: transactions", () => {
  const orders = async (schema = "public") => {
    const table = `${schema}.orders_${freshTable()}`;
    await pgPool!.query(`CREATE TABLE ${table} (po text NOT NULL, note text)`);
    const count = async (po: string) =>
      Number(
        (await pgPool!.query(`SELECT count(*) AS n FROM ${table} WHERE po = $1`, [po])).rows[0].n,
      );
    return { table, count };
  };

  it("the record table in the user's schema, beside the business table", async () => {
    await pgPool!.query("CREATE SCHEMA IF NOT EXISTS app");
    const backend = new SqlLock({ client: pgPool!, table: `app.${freshTable()}` });
    await backend.ensureSchema();
    const { table, count } = await orders("app");
    await lockInTransaction("po:1", { backend, logger: silentLogger }, async (tx) => {
      await tx.query(`INSERT INTO ${table} (po) VALUES ($1)`, ["1"]);
    });
    expect(await count("1")).toBe(1);
    const records = await pgPool!.query(`SELECT "key", state FROM ${backend.table}`);
    expect(records.rows).toEqual([{ key: "po:1", state: "done" }]);
  });

  it("a connection killed inside the body lands neither and frees the key", async () => {
    const backend = new SqlLock({ client: pgPool!, table: freshTable() });
    await backend.ensureSchema();
    const { table, count } = await orders();
    const logger = captureLogger();
    const error = await lockInTransaction("po:kill", { backend, logger }, async (tx) => {
      await tx.query(`INSERT INTO ${table} (po) VALUES ($1)`, ["kill"]);
      const pid = (await tx.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
      // Our own backend, from another connection: the complete and COMMIT never reach it.
      await pgPool!.query("SELECT pg_terminate_backend($1)", [pid]);
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ backend: "postgres", verb: "completeInTransaction" });
    expect(await count("kill")).toBe(0);
    // Released at once: the redelivery runs, and lands.
    await lockInTransaction("po:kill", { backend, logger }, async (tx) => {
      await tx.query(`INSERT INTO ${table} (po) VALUES ($1)`, ["kill"]);
    });
    expect(await count("kill")).toBe(1);
    expect(logger.at("ERROR")).toEqual([]);
  });

  it("a constraint checked at COMMIT (deferred) fails the commit: neither lands, the key is freed", async () => {
    const backend = new SqlLock({ client: pgPool!, table: freshTable() });
    await backend.ensureSchema();
    const table = `ledger_${freshTable()}`;
    await pgPool!.query(
      `CREATE TABLE ${table} (entry text, CONSTRAINT once UNIQUE (entry) DEFERRABLE INITIALLY DEFERRED)`,
    );
    await pgPool!.query(`INSERT INTO ${table} VALUES ('taken')`);
    let fence = 0;
    const error = await lockInTransaction(
      "m:deferred",
      { backend, logger: silentLogger },
      async (tx, claim) => {
        fence = claim.fencingId;
        await tx.query(`INSERT INTO ${table} VALUES ('new'), ('taken')`); // passes until COMMIT
        return "ran";
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect((error as BackendError).cause).toMatchObject({ code: "23505" });
    const rows = await pgPool!.query(`SELECT entry FROM ${table} ORDER BY entry`);
    expect(rows.rows.map((row) => row.entry)).toEqual(["taken"]);
    // Released: the next claim wins at once, at fence + 2.
    expect(won(await backend.claim("m:deferred", 60_000)).fencingId).toBe(fence + 2);
  });

  it("a body that swallows a failed statement cannot commit: the complete fails, nothing lands", async () => {
    const backend = new SqlLock({ client: pgPool!, table: freshTable() });
    await backend.ensureSchema();
    const { table, count } = await orders();
    let fence = 0;
    const error = await lockInTransaction(
      "po:swallow",
      { backend, logger: silentLogger },
      async (tx, claim) => {
        fence = claim.fencingId;
        await tx.query(`INSERT INTO ${table} (po) VALUES ($1)`, ["swallow"]);
        await tx.query("SELECT * FROM no_such_table").catch(() => {});
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect(await count("swallow")).toBe(0);
    expect(won(await backend.claim("po:swallow", 60_000)).fencingId).toBe(fence + 2);
  });

  it("on one pg Client, claims wait for the open transaction and bodies run one at a time", async () => {
    const client = new pg.Client({ connectionString: postgres!.url });
    await client.connect();
    try {
      const backend = new SqlLock({ client, table: freshTable() });
      await backend.ensureSchema();
      const { table, count } = await orders();
      const order: string[] = [];
      const body = (name: string, fail: boolean) => async (tx: pg.Client) => {
        order.push(`${name} begins`);
        await tx.query(`INSERT INTO ${table} (po) VALUES ($1)`, [name]);
        await sleep(30);
        order.push(`${name} ends`);
        if (fail) throw new Error(`${name} fails`);
      };
      const a = lockInTransaction("a", { backend, logger: silentLogger }, body("a", true));
      const b = lockInTransaction("b", { backend, logger: silentLogger }, body("b", false));
      // A plain lock() during a's body: its claim must not join a's transaction (which rolls back).
      await sleep(5);
      const other = lock("c", { backend, logger: silentLogger }, () => "c ran");
      await expect(a).rejects.toThrow("a fails");
      await expect(b).resolves.toBeUndefined();
      await expect(other).resolves.toBe("c ran");
      expect(order).toEqual(["a begins", "a ends", "b begins", "b ends"]);
      expect([await count("a"), await count("b")]).toEqual([0, 1]);
      expect(await backend.claim("c", 60_000)).toEqual({ status: "done" });
    } finally {
      await client.end();
    }
  });
});

describe.skipIf(!mariadb)("SqlLock mysql: transactions", () => {
  it("the connection killed inside the body lands neither and frees the key", async () => {
    const backend = new SqlLock({ client: myPool!, table: freshTable() });
    await backend.ensureSchema();
    const table = `orders_${freshTable()}`;
    await myPool!.query(`CREATE TABLE ${table} (po VARCHAR(64) NOT NULL)`);
    const count = async () => {
      const [rows] = await myPool!.query(`SELECT count(*) AS n FROM ${table}`);
      return Number((rows as Array<{ n: number }>)[0]?.n);
    };
    const error = await lockInTransaction(
      "po:kill",
      { backend, logger: silentLogger },
      async (tx) => {
        await tx.execute(`INSERT INTO ${table} (po) VALUES (?)`, ["kill"]);
        const [rows] = await tx.query("SELECT CONNECTION_ID() AS id");
        const id = Number((rows as Array<{ id: number }>)[0]?.id);
        // This transaction's own connection, from the admin connection.
        await mariadb!.admin.query(`KILL ${id}`);
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ backend: "mysql", verb: "completeInTransaction" });
    expect(await count()).toBe(0);
    await lockInTransaction("po:kill", { backend, logger: silentLogger }, async (tx) => {
      await tx.execute(`INSERT INTO ${table} (po) VALUES (?)`, ["kill"]);
    });
    expect(await count()).toBe(1);
  });
});

describe.skipIf(!mariadb)("SqlLock mysql: the record table in the user's database", () => {
  it("database.table puts the records there, and the business row and DONE commit together", async () => {
    // A database of the user's own, not the pool's: the records live beside the orders.
    const database = `app_${freshTable()}`;
    await mariadb!.admin.query(`CREATE DATABASE ${database}`);
    try {
      const backend = new SqlLock({ client: myPool!, table: `${database}.records` });
      await backend.ensureSchema();
      await myPool!.query(`CREATE TABLE ${database}.orders (po VARCHAR(64) NOT NULL)`);
      const [tables] = await mariadb!.admin.query(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? ORDER BY 1",
        [database],
      );
      expect((tables as Array<{ name: string }>).map((t) => t.name)).toEqual(["orders", "records"]);

      await lockInTransaction("po:1", { backend, logger: silentLogger }, async (tx) => {
        await tx.execute(`INSERT INTO ${database}.orders (po) VALUES (?)`, ["1"]);
      });
      const [orders] = await myPool!.query(`SELECT po FROM ${database}.orders`);
      expect(orders).toEqual([{ po: "1" }]);
      const [records] = await myPool!.query(
        `SELECT CAST(\`key\` AS CHAR) AS k, state FROM ${database}.records`,
      );
      expect(records).toEqual([{ k: "po:1", state: "done" }]);
      // A body that throws lands neither, in that database too.
      const error = await lockInTransaction(
        "po:2",
        { backend, logger: silentLogger },
        async (tx) => {
          await tx.execute(`INSERT INTO ${database}.orders (po) VALUES (?)`, ["2"]);
          throw new Error("the body failed");
        },
      ).catch((e: unknown) => e);
      expect(error).toMatchObject({ message: "the body failed" });
      const [after] = await myPool!.query(`SELECT count(*) AS n FROM ${database}.orders`);
      expect(Number((after as Array<{ n: number }>)[0]?.n)).toBe(1);
      // The pool's own database holds no record table of that name.
      const [own] = await myPool!.query(
        "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'records'",
      );
      expect(Number((own as Array<{ n: number }>)[0]?.n)).toBe(0);
    } finally {
      await mariadb!.admin.query(`DROP DATABASE IF EXISTS ${database}`);
    }
  });
});

describe("SqlLock sqlite: one connection shared by async bodies", () => {
  it("bodies never interleave, and a claim made during a body waits for its transaction", async () => {
    const db = sqlite.open(`${freshTable()}.db`);
    const backend = new SqlLock({ client: db, table: freshTable() });
    await backend.ensureSchema();
    db.exec("CREATE TABLE orders (po TEXT NOT NULL)");
    const count = (po: string) =>
      (db.prepare("SELECT count(*) AS n FROM orders WHERE po = ?").get(po) as { n: number }).n;
    const order: string[] = [];
    const body = (name: string, fail: boolean) => async (tx: Database.Database) => {
      order.push(`${name} begins`);
      tx.prepare("INSERT INTO orders (po) VALUES (?)").run(name);
      await sleep(20); // the event loop runs other deliveries meanwhile
      order.push(`${name} ends`);
      if (fail) throw new Error(`${name} fails`);
    };
    const runs = ["a", "b", "c"].map((name, i) =>
      lockInTransaction(name, { backend, logger: silentLogger }, body(name, i === 0)),
    );
    const settled = Promise.allSettled(runs);
    await sleep(5);
    // During a's body: without the gate this claim would join a's transaction and vanish
    // with its rollback. It waits until no transaction is open or queued.
    const claim = won(await backend.claim("d", 60_000));
    expect(order).toEqual(["a begins", "a ends", "b begins", "b ends", "c begins", "c ends"]);
    expect((await settled).map((s) => s.status)).toEqual(["rejected", "fulfilled", "fulfilled"]);
    expect([count("a"), count("b"), count("c")]).toEqual([0, 1, 1]);
    expect(await backend.claim("d", 60_000)).toEqual({
      status: "held",
      leaseExpiresAt: claim.leaseExpiresAt,
    });
  });

  it("a body that ends the transaction itself never lets DONE land alone", async () => {
    const db = sqlite.open(`${freshTable()}.db`);
    const backend = new SqlLock({ client: db, table: freshTable() });
    await backend.ensureSchema();
    let fence = 0;
    const error = await lockInTransaction(
      "m",
      { backend, logger: silentLogger },
      async (tx, claim) => {
        fence = claim.fencingId;
        tx.exec("ROLLBACK");
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect(String((error as Error).message)).toMatch(/transaction ended inside the body/);
    expect(won(await backend.claim("m", 60_000)).fencingId).toBe(fence + 2);
  });
});
