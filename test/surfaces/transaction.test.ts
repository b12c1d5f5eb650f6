// Transaction mode (`transaction: true`) on the three surfaces, over SqlLock on SQLite: the
// handler gets the transaction, its rows and the message's DONE commit together; a throw or a
// failed commit lands neither (nack) and the redelivery runs once; a duplicate never opens a
// transaction. Also the typing of each handler, and the refusals at build time.
import type Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { SqlLock } from "../../src/backends/sql/index.js";
import {
  type CloudEventLike,
  InMemoryLock,
  InvalidConfiguration,
  idempotent,
  idempotentHttp,
  idempotentMessage,
  type ParsedMessage,
  parseCloudEvent,
  type Req,
} from "../../src/index.js";
import { resetDisabledWarning } from "../../src/surfaces/disabled.js";
import { fakeMessage, pushRequest, structuredCloudEvent } from "../../src/testing/index.js";
import { startSqlite } from "../support/sql.js";
import { captureLogger } from "./helpers.js";

const files = startSqlite();
afterAll(() => files.drop());
let counter = 0;

/** A fresh database: the records table and an orders table beside it, no unique constraint. */
async function store() {
  const db = files.open(`surface-${counter++}.db`);
  const backend = new SqlLock({ client: db });
  await backend.ensureSchema();
  db.exec("CREATE TABLE orders (body TEXT NOT NULL)");
  const rows = () =>
    (db.prepare("SELECT body FROM orders ORDER BY rowid").all() as Array<{ body: string }>).map(
      (row) => row.body,
    );
  const insert = (tx: Database.Database, body: string) =>
    tx.prepare("INSERT INTO orders (body) VALUES (?)").run(body);
  return { db, backend, rows, insert };
}

function response() {
  return {
    statusCode: 0,
    text: "",
    end(chunk?: string) {
      this.text = chunk ?? "";
    },
  };
}

afterEach(() => {
  delete process.env.GCP_PUBSUB_IDEMPOTENCY_DISABLED;
  resetDisabledWarning();
});

describe("idempotent({ transaction: true })", () => {
  it("commits the handler's row with DONE; a duplicate skips; a throw lands nothing and rejects", async () => {
    const { backend, rows, insert } = await store();
    let fail = true;
    const handler = idempotent(
      { backend, transaction: true, logger: captureLogger() },
      async (event, tx) => {
        expectTypeOf(tx).toEqualTypeOf<Database.Database>();
        expectTypeOf(event).toEqualTypeOf<CloudEventLike>();
        insert(tx, parseCloudEvent(event).text());
        if (fail) throw new Error("downstream refused");
      },
    );
    const event = structuredCloudEvent("order 1", { messageId: "ce-1" });
    await expect(handler(event)).rejects.toThrow("downstream refused");
    expect(rows()).toEqual([]);
    fail = false;
    await handler(event);
    await handler(event); // a duplicate: acked, not run
    expect(rows()).toEqual(["order 1"]);
  });
});

describe("idempotentHttp({ transaction: true })", () => {
  it("answers 204 after the commit, 204 for a duplicate, 500 when the commit fails", async () => {
    const { db, backend, rows, insert } = await store();
    const handler = idempotentHttp(
      { backend, transaction: true, logger: captureLogger() },
      async (message, tx, req, signal) => {
        expectTypeOf(message).toEqualTypeOf<ParsedMessage>();
        expectTypeOf(tx).toEqualTypeOf<Database.Database>();
        expectTypeOf(req).toEqualTypeOf<Req>();
        expectTypeOf(signal).toEqualTypeOf<AbortSignal>();
        insert(tx, message.text());
        if (message.attributes.end === "commit") tx.exec("COMMIT"); // breaks the transaction
      },
    );
    const push = pushRequest("order 7", { messageId: "h-1" });
    const first = response();
    await handler(push, first);
    expect(first.statusCode).toBe(204);
    const again = response();
    await handler(push, again);
    expect(again.statusCode).toBe(204);
    expect(rows()).toEqual(["order 7"]);

    // The handler ends the transaction itself: DONE cannot land alone, the push is a 500.
    const broken = response();
    await handler(
      pushRequest("order 8", { messageId: "h-2", attributes: { end: "commit" } }),
      broken,
    );
    expect(broken.statusCode).toBe(500);
    expect(await backend.claim("h-2", 60_000)).toMatchObject({ status: "won" });
    expect(db.inTransaction).toBe(false);
  });

  it("a duplicate never opens a transaction", async () => {
    const { backend, insert } = await store();
    let opened = 0;
    const counting = Object.assign(Object.create(backend) as SqlLock<Database.Database>, {
      completeInTransaction: (...args: Parameters<typeof backend.completeInTransaction>) => {
        opened++;
        return backend.completeInTransaction(...args);
      },
    });
    const handler = idempotentHttp({ backend: counting, transaction: true }, async (m, tx) => {
      insert(tx, m.text());
    });
    const push = pushRequest("once", { messageId: "h-3" });
    await handler(push, response());
    await handler(push, response());
    expect(opened).toBe(1);
  });
});

describe("idempotentMessage({ transaction: true })", () => {
  it("acks after the commit, nacks a throw with nothing landed, and the redelivery lands once", async () => {
    const { backend, rows, insert } = await store();
    let attempt = 0;
    const onMessage = idempotentMessage(
      { backend, transaction: true, logger: captureLogger() },
      async (message, tx) => {
        expectTypeOf(tx).toEqualTypeOf<Database.Database>();
        attempt++;
        insert(tx, `${message.data?.toString()} attempt ${attempt}`);
        if (attempt === 1) throw new Error("transient");
      },
    );
    const first = fakeMessage("order 9", { messageId: "p-1" });
    await onMessage(first);
    expect(first.settlements).toEqual(["nack"]);
    expect(rows()).toEqual([]);
    const second = fakeMessage("order 9", { messageId: "p-1" });
    await onMessage(second);
    const third = fakeMessage("order 9", { messageId: "p-1" });
    await onMessage(third);
    expect([second.settlements, third.settlements]).toEqual([["ack"], ["ack"]]);
    expect(rows()).toEqual(["order 9 attempt 2"]);
  });
});

describe("transaction mode: refusals", () => {
  it("a backend without transactions is refused when the surface is built, naming it", () => {
    const backend = new InMemoryLock();
    const options = { backend, transaction: true } as never;
    for (const build of [
      () => idempotent(options, async () => {}),
      () => idempotentHttp(options, async () => {}),
      () => idempotentMessage(options, async () => {}),
    ]) {
      expect(build).toThrow(InvalidConfiguration);
      expect(build).toThrow(/InMemoryLock has none/);
    }
  });

  it("allowUnguarded cannot be combined with it; a non-boolean is refused", async () => {
    const { backend } = await store();
    expect(() =>
      idempotent({ backend, transaction: true, allowUnguarded: true } as never, async () => {}),
    ).toThrow(/allowUnguarded cannot be combined/);
    expect(() => idempotent({ backend, transaction: "yes" } as never, async () => {})).toThrow(
      /options.transaction must be true or false/,
    );
  });

  it("types: transaction: true needs a transactional backend, and the plain handler gets no tx", () => {
    // Built only to be type-checked: at run time it throws (the case above).
    const refused = () =>
      // @ts-expect-error InMemoryLock has no completeInTransaction
      idempotentMessage({ backend: new InMemoryLock(), transaction: true }, async () => {});
    expect(refused).toThrow(InvalidConfiguration);
    idempotentMessage({ backend: new InMemoryLock() }, async (message, signal) => {
      expectTypeOf(signal).toEqualTypeOf<AbortSignal>();
      void message;
    });
  });

  it("with the gateway disabled, a transactional handler is not run without its transaction", async () => {
    const { backend, rows, insert } = await store();
    process.env.GCP_PUBSUB_IDEMPOTENCY_DISABLED = "1";
    const logger = captureLogger();
    let ran = false;
    const onMessage = idempotentMessage({ backend, transaction: true, logger }, async (m, tx) => {
      ran = true;
      insert(tx, String(m.data));
    });
    const message = fakeMessage("x", { messageId: "d-1" });
    await onMessage(message);
    expect(message.settlements).toEqual(["nack"]);
    expect(ran).toBe(false);
    expect(rows()).toEqual([]);
    expect(logger.at("ERROR")[0]?.fields.reason).toMatch(/cannot run without the store/);
  });
});
