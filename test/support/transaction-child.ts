// A consumer process for the lockInTransaction crash storm: it takes messages from its parent
// (as Pub/Sub would deliver them), runs each through lockInTransaction writing two business
// rows (an order and an outbox entry) to a store with no unique constraint, and answers how
// it went. A message may carry a crash point: the process then SIGKILLs itself there — before,
// between or after the business writes, or just before the commit — killing with it every
// other message it holds, wherever they are.
//
// The control (`plainLock`, PostgreSQL): the same messages through plain lock(), whose body
// writes the two rows in a transaction of its own and commits it before lock() completes the
// key. Its crash point "committed" falls in that window: rows committed, DONE not written.
import { Firestore } from "@google-cloud/firestore";
import pg from "pg";
import {
  decodeDocumentId,
  type FirestoreDocumentLike,
  type FirestoreLike,
  FirestoreLock,
} from "../../src/backends/firestore/index.js";
import { type PgPoolClientLike, type PgPoolLike, SqlLock } from "../../src/backends/sql/index.js";
import { Duplicate, InProgress, lock, lockInTransaction } from "../../src/index.js";

/**
 * Where a consumer kills itself: before, between or after the two business writes, just
 * before the commit, or (the plain-lock control only) after the body's own commit, before DONE.
 */
export type CrashPoint = "before" | "between" | "after" | "commit" | "committed";

export interface StormMessage {
  readonly id: string;
  readonly crashAt?: CrashPoint | undefined;
}

export interface StormAnswer {
  readonly id: string;
  readonly outcome: "ran" | "duplicate" | "held" | "failed";
  readonly error?: string;
}

export interface ChildConfig {
  readonly store: "postgres" | "firestore";
  /** PostgreSQL: the database URL. Firestore: the project (the emulator host is in the env). */
  readonly target: string;
  /** The records table (PostgreSQL) or collection (Firestore). */
  readonly records: string;
  /** The business table or collection. */
  readonly orders: string;
  readonly leaseMs: number;
  /** The control: plain lock() with the body's own transaction, instead of lockInTransaction. */
  readonly plainLock?: boolean;
}

const config = JSON.parse(process.argv[2] ?? "{}") as ChildConfig;
const silent = { info() {}, warn() {}, error() {} };
const die = (): never => {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable");
};
const crashIf = (message: StormMessage, point: CrashPoint) => {
  if (message.crashAt === point) die();
};
/** Keys whose next commit is to be cut off, by the store's own hook below. */
const commitCrashes = new Set<string>();

type Handle = (message: StormMessage) => Promise<void>;

function postgres(): Handle {
  const pool = new pg.Pool({ connectionString: config.target, max: 8 });
  const patched = new WeakSet<object>();
  const armed = new WeakSet<object>();
  // The pool as SqlLock sees it, except that a COMMIT on an armed connection never leaves.
  const watched: PgPoolLike = {
    query: ((...args: Parameters<pg.Pool["query"]>) =>
      pool.query(...args)) as unknown as PgPoolLike["query"],
    get totalCount() {
      return pool.totalCount;
    },
    async connect() {
      const client = await pool.connect();
      if (!patched.has(client)) {
        patched.add(client);
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as { query: unknown }).query = (...args: unknown[]) => {
          if (args[0] === "COMMIT" && armed.has(client)) die();
          return query(...args);
        };
      }
      armed.delete(client);
      return client as unknown as PgPoolClientLike;
    },
  };
  const backend = new SqlLock({ client: watched, table: config.records });
  const insert = `INSERT INTO ${config.orders} (msg, kind) VALUES ($1, $2)`;
  if (config.plainLock) {
    return async (message) => {
      await lock(message.id, { backend, leaseMs: config.leaseMs, logger: silent }, async () => {
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          crashIf(message, "before");
          await client.query({ name: "storm_order", text: insert, values: [message.id, "order"] });
          crashIf(message, "between");
          await client.query({ name: "storm_order", text: insert, values: [message.id, "outbox"] });
          crashIf(message, "after");
          await client.query("COMMIT");
        } finally {
          client.release();
        }
        // The window lockInTransaction closes: the rows are in, the key is not yet DONE.
        crashIf(message, "committed");
      });
    };
  }
  return async (message) => {
    await lockInTransaction(
      message.id,
      { backend, leaseMs: config.leaseMs, logger: silent },
      async (tx) => {
        crashIf(message, "before");
        await tx.query({ name: "storm_order", text: insert, values: [message.id, "order"] });
        crashIf(message, "between");
        await tx.query({ name: "storm_order", text: insert, values: [message.id, "outbox"] });
        crashIf(message, "after");
        if (message.crashAt === "commit") armed.add(tx);
      },
    );
  };
}

function firestore(): Handle {
  const db = new Firestore({ projectId: config.target });
  const orders = db.collection(config.orders);
  const real = db as unknown as FirestoreLike;
  // The instance as FirestoreLock sees it, except that the record read after an armed body
  // (the last step before the commit) never returns.
  const watched: FirestoreLike = {
    collection: (path) => {
      const collection = real.collection(path);
      return {
        where: (field, op, value) => collection.where(field, op, value),
        doc: (id) => {
          const ref = collection.doc(id);
          const key = decodeDocumentId(id);
          const watching = Object.create(ref) as FirestoreDocumentLike;
          watching.get = async () => {
            const snapshot = await ref.get();
            if (commitCrashes.has(key)) die();
            return snapshot;
          };
          return watching;
        },
      };
    },
    runTransaction: (update, options) => real.runTransaction!(update, options),
  };
  const backend = new FirestoreLock({ firestore: watched, collection: config.records });
  return async (message) => {
    await lockInTransaction(
      message.id,
      { backend, leaseMs: config.leaseMs, logger: silent },
      async (structural) => {
        const tx = structural as unknown as FirebaseFirestore.Transaction;
        crashIf(message, "before");
        tx.create(orders.doc(), { msg: message.id, kind: "order" });
        crashIf(message, "between");
        tx.create(orders.doc(), { msg: message.id, kind: "outbox" });
        crashIf(message, "after");
        if (message.crashAt === "commit") commitCrashes.add(message.id);
      },
    );
  };
}

const handle = config.store === "postgres" ? postgres() : firestore();

process.on("message", async (message: StormMessage) => {
  let answer: StormAnswer;
  try {
    await handle(message);
    answer = { id: message.id, outcome: "ran" };
  } catch (error) {
    answer =
      error instanceof Duplicate
        ? { id: message.id, outcome: "duplicate" }
        : error instanceof InProgress
          ? { id: message.id, outcome: "held" }
          : { id: message.id, outcome: "failed", error: String(error) };
  }
  process.send?.(answer);
});
process.send?.({ ready: true });
