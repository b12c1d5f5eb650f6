// The lockInTransaction crash storm (issue 16): 1,000 messages through four consumer processes
// that SIGKILL themselves at random points inside the body — before, between and after the two
// business writes, and just before the commit — taking every other message they hold down with
// them. The parent plays Pub/Sub: a message is redelivered until a consumer acks it (ran or
// duplicate); a dead consumer's messages are nacked and it is restarted. The business store has
// no unique constraint, yet every message ends with exactly one order and one outbox row, on
// PostgreSQL and on the Firestore emulator.
//
// The control proves the storm can fail: the same harness with plain lock() and the body's own
// transaction, each consumer killed after its body committed and before DONE, ends with a
// message's rows written twice.
import { type ChildProcess, fork } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Firestore } from "@google-cloud/firestore";
import { afterAll, describe, expect, it } from "vitest";
import { SqlLock } from "../../src/backends/sql/index.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip, startOrSkip } from "../support/required.js";
import { startPostgres } from "../support/sql.js";
import type {
  ChildConfig,
  CrashPoint,
  StormAnswer,
  StormMessage,
} from "../support/transaction-child.js";
import { runScopedNames } from "./google-cases.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const MESSAGES = 1_000;
const CONSUMERS = 4;
/** Messages one consumer holds at once, as a pull client's flow control would allow. */
const IN_FLIGHT = 6;
/** The first delivery of about one message in 25 kills its consumer at one of the points. */
const CRASH_CHANCE = 0.04;
const POINTS: readonly CrashPoint[] = ["before", "between", "after", "commit"];
/** A redelivery after a nack or a crash waits this long (a subscription's retry policy). */
const REDELIVERY_MS = 200;

interface Storm {
  deliveries: number;
  crashes: number;
  crashesByPoint: Record<CrashPoint, number>;
  restarts: number;
  acked: Set<string>;
  seconds: number;
}

/** About one message in 25 at a random point of the four, on its first delivery. */
const randomCrashes = (): CrashPoint | undefined =>
  Math.random() < CRASH_CHANCE ? POINTS[Math.floor(Math.random() * POINTS.length)] : undefined;

/**
 * Deliver every message until acked, through consumers that keep dying; resolves when all
 * are. `crashAt(i)` says where message i's first delivery kills its consumer, if anywhere.
 */
async function storm(
  config: ChildConfig,
  env: Record<string, string>,
  crashAt: (index: number) => CrashPoint | undefined = randomCrashes,
  messages = MESSAGES,
  inFlight = IN_FLIGHT,
): Promise<Storm> {
  const started = Date.now();
  const ids = Array.from({ length: messages }, (_, i) => `m-${i}`);
  const pending: StormMessage[] = ids.map((id, i) => ({ id, crashAt: crashAt(i) }));
  const result: Storm = {
    deliveries: 0,
    crashes: 0,
    crashesByPoint: { before: 0, between: 0, after: 0, commit: 0, committed: 0 },
    restarts: 0,
    acked: new Set(),
    seconds: 0,
  };
  let finish: () => void = () => {};
  const finished = new Promise<void>((done) => {
    finish = done;
  });
  const redeliver = (message: StormMessage) => {
    // A crash point fires on the first delivery only; redeliveries run clean.
    setTimeout(() => {
      pending.push({ id: message.id });
      dispatch();
    }, REDELIVERY_MS);
  };

  interface Consumer {
    child: ChildProcess;
    ready: boolean;
    held: Map<string, StormMessage>;
  }
  const consumers: Consumer[] = [];
  const start = (slot: number) => {
    const child = fork(join(here, "../support/transaction-child.ts"), [JSON.stringify(config)], {
      execArgv: ["--import", "tsx", "--import", join(here, "../../scripts/text-loader.mjs")],
      env: { ...process.env, ...env },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const consumer: Consumer = { child, ready: false, held: new Map() };
    consumers[slot] = consumer;
    child.on("message", (raw: StormAnswer | { ready: true }) => {
      if ("ready" in raw) {
        consumer.ready = true;
        dispatch();
        return;
      }
      const message = consumer.held.get(raw.id);
      consumer.held.delete(raw.id);
      if (raw.outcome === "ran" || raw.outcome === "duplicate") {
        result.acked.add(raw.id);
        if (result.acked.size === messages) finish();
      } else if (message) {
        if (raw.outcome === "failed") console.warn(`[storm] ${raw.id} failed: ${raw.error}`);
        redeliver(message);
      }
      dispatch();
    });
    child.on("exit", (_code, signal) => {
      if (signal === "SIGKILL") result.crashes++;
      // Pub/Sub sees no ack for what it held: every one of them comes back.
      for (const message of consumer.held.values()) redeliver(message);
      consumer.held.clear();
      consumer.ready = false;
      if (result.acked.size < messages) {
        result.restarts++;
        start(slot);
      }
    });
  };
  const dispatch = () => {
    for (const consumer of consumers) {
      if (!consumer?.ready) continue;
      while (consumer.held.size < inFlight && pending.length > 0) {
        const message = pending.shift()!;
        if (result.acked.has(message.id)) continue;
        if (message.crashAt) result.crashesByPoint[message.crashAt]++;
        consumer.held.set(message.id, message);
        result.deliveries++;
        consumer.child.send(message);
      }
    }
  };
  for (let slot = 0; slot < CONSUMERS; slot++) start(slot);
  try {
    await finished;
  } finally {
    for (const consumer of consumers) {
      consumer.child.removeAllListeners("exit");
      consumer.child.kill("SIGKILL");
    }
  }
  result.seconds = (Date.now() - started) / 1000;
  return result;
}

function report(store: string, s: Storm): void {
  console.info(
    `[storm] ${store}: ${s.acked.size} messages acked, ${s.deliveries} deliveries, ${s.crashes} consumers ` +
      `SIGKILLed (chosen points: ${JSON.stringify(s.crashesByPoint)}), ${s.restarts} restarts, ` +
      `${s.seconds.toFixed(1)} s`,
  );
}

const postgres = await startOrSkip("PostgreSQL", startPostgres);
const emulator = await emulatorOrSkip("firestore");
afterAll(async () => {
  await postgres?.drop();
  await emulator?.stop();
});

describe.skipIf(!postgres)("lockInTransaction crash storm: PostgreSQL", () => {
  it("every message has exactly one order and one outbox row, none missing, every message acked", async () => {
    const pool = postgres!.pool(2);
    await new SqlLock({ client: pool, table: "records" }).ensureSchema();
    // No unique constraint: only the transaction keeps the rows to one per message.
    await pool.query("CREATE TABLE orders (msg text NOT NULL, kind text NOT NULL)");
    const s = await storm(
      {
        store: "postgres",
        target: postgres!.url,
        records: "records",
        orders: "orders",
        leaseMs: 1_500,
      },
      {},
    );
    report("PostgreSQL", s);
    expect(s.acked.size).toBe(MESSAGES);
    expect(s.crashes).toBeGreaterThan(0);
    const { rows } = await pool.query<{ msg: string; orders: string; outbox: string }>(
      `SELECT msg, count(*) FILTER (WHERE kind = 'order') AS orders,
                count(*) FILTER (WHERE kind = 'outbox') AS outbox
         FROM orders GROUP BY msg`,
    );
    expect(rows).toHaveLength(MESSAGES);
    const wrong = rows.filter((row) => Number(row.orders) !== 1 || Number(row.outbox) !== 1);
    expect(wrong).toEqual([]);
    const records = await pool.query("SELECT count(*) AS n FROM records WHERE state = 'done'");
    expect(Number(records.rows[0].n)).toBe(MESSAGES);
  }, 300_000);
});

describe.skipIf(!postgres)("the control: plain lock() in the same storm", () => {
  it("a consumer killed after its own commit and before DONE leaves that message's rows twice", async () => {
    const pool = postgres!.pool(2);
    await new SqlLock({ client: pool, table: "control_records" }).ensureSchema();
    await pool.query("CREATE TABLE control_orders (msg text NOT NULL, kind text NOT NULL)");
    const messages = 8;
    // Every fourth message's first delivery dies in the window: committed, not completed. One
    // message per consumer at a time, so each death is that message's own, at that point.
    const killed = (i: number) => i % 4 === 0;
    const s = await storm(
      {
        store: "postgres",
        target: postgres!.url,
        records: "control_records",
        orders: "control_orders",
        leaseMs: 1_000,
        plainLock: true,
      },
      {},
      (i) => (killed(i) ? "committed" : undefined),
      messages,
      1,
    );
    report("PostgreSQL, plain lock() control", s);
    expect(s.acked.size).toBe(messages);
    expect(s.crashesByPoint.committed).toBe(messages / 4);
    expect(s.crashes).toBe(messages / 4);
    const { rows } = await pool.query<{ msg: string; orders: string }>(
      `SELECT msg, count(*) FILTER (WHERE kind = 'order') AS orders
         FROM control_orders GROUP BY msg`,
    );
    const orders = new Map(rows.map((row) => [row.msg, Number(row.orders)]));
    // Each killed message's rows landed, then its redelivery (after the lease lapsed) ran the
    // body again: the storm's exactly-once assertion would fail on plain lock().
    for (let i = 0; i < messages; i++)
      if (killed(i)) expect(orders.get(`m-${i}`), `m-${i}`).toBeGreaterThanOrEqual(2);
    expect(orders.size).toBe(messages);
  }, 120_000);
});

describe.skipIf(!emulator)("lockInTransaction crash storm: Firestore emulator", () => {
  it("every message has exactly one order and one outbox document, none missing, every message acked", async () => {
    const names = runScopedNames();
    const records = names();
    const orders = names();
    const s = await storm(
      { store: "firestore", target: PROJECT, records, orders, leaseMs: 3_000 },
      { FIRESTORE_EMULATOR_HOST: emulator!.host },
    );
    report("Firestore", s);
    expect(s.acked.size).toBe(MESSAGES);
    expect(s.crashes).toBeGreaterThan(0);
    const firestore = new Firestore({ projectId: PROJECT });
    try {
      const docs = (await firestore.collection(orders).get()).docs.map((d) => d.data());
      const counts = new Map<string, { order: number; outbox: number }>();
      for (const doc of docs) {
        const entry = counts.get(doc.msg) ?? { order: 0, outbox: 0 };
        entry[doc.kind as "order" | "outbox"]++;
        counts.set(doc.msg, entry);
      }
      expect(counts.size).toBe(MESSAGES);
      const wrong = [...counts].filter(([, c]) => c.order !== 1 || c.outbox !== 1);
      expect(wrong).toEqual([]);
    } finally {
      await firestore.terminate();
    }
  }, 300_000);
});
