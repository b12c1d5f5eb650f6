// The pause storm (issue 32): consumer processes frozen with SIGSTOP for longer than their
// lease, in the middle of a body, and resumed with SIGCONT after another consumer reclaimed
// the key — a long GC pause, a CPU-throttled Cloud Run instance, a VM live-migration. The
// lock cannot stop the resumed body; only what the body's effect goes through can refuse it.
//
// The parent plays Pub/Sub: it delivers each order to one of four consumers, redelivers it
// when no answer came within the ack deadline or the answer was a nack, and freezes a
// consumer on a first delivery's "working" (body started, no effect yet) or "wrote" (effect
// made, key not yet DONE) report, for three leases. Four runs, one guard each:
// - none, the control: lock(); the sink appends every write. A resumed body writes again.
// - fence: the sink refuses a fence below the highest it has seen for the order and replaces
//   on an equal or higher one (Kleppmann's fencing token).
// - transaction: lockInTransaction on PostgreSQL into a plain table with no unique key.
// - signal: lock() with a heartbeat, the body honouring its signal; the sink appends.
//
// PAUSE_STORM_ORDERS sets the orders per run (default 100).
import { type ChildProcess, fork } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import type {
  Guard,
  PauseAnswer,
  PauseChildConfig,
  PauseMessage,
  PauseProgress,
} from "../support/pause-child.js";
import { findOrStartRedis } from "../support/redis.js";
import { startOrSkip } from "../support/required.js";
import { startPostgres } from "../support/sql.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const ORDERS = Number(process.env.PAUSE_STORM_ORDERS ?? 100);
const CONSUMERS = 4;
const IN_FLIGHT = 4;
const LEASE_MS = 400;
const WORK_MS = 25;
/** Frozen for three leases: every lease it held has lapsed when it resumes. */
const PAUSE_MS = 3 * LEASE_MS;
/** Pub/Sub redelivers what got no answer within the ack deadline... */
const ACK_DEADLINE_MS = LEASE_MS + 200;
/** ...and a nacked message after its retry policy's backoff. */
const REDELIVERY_MS = 100;
/**
 * Which first deliveries freeze their consumer, and where: the orders whose number leaves this
 * remainder (one in 12 as its body starts, one in 25 right after its effect). Chosen by
 * number, not by chance, so every run freezes consumers at both points.
 */
const FREEZE_AT = {
  working: (order: number) => order % 12 === 5,
  wrote: (order: number) => order % 25 === 11,
} as const;

/** One write the sink saw. */
interface Write {
  order: string;
  fence: number;
  delivery: number;
  accepted: boolean;
  /** A higher fence had written this order before it arrived. */
  stale: boolean;
}

interface Sink {
  url: string;
  writes: Write[];
  close(): Promise<void>;
}

/** The business endpoint the bodies write to: `fenced` refuses fences below the highest seen. */
async function startSink(fenced: boolean): Promise<Sink> {
  const writes: Write[] = [];
  const highest = new Map<string, number>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const { order, fence, delivery } = JSON.parse(Buffer.concat(chunks).toString()) as Write;
      const top = highest.get(order) ?? Number.NEGATIVE_INFINITY;
      const stale = fence < top;
      const accepted = !(fenced && stale);
      writes.push({ order, fence, delivery, accepted, stale });
      if (fence > top) highest.set(order, fence);
      response.writeHead(accepted ? 204 : 409).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/orders`,
    writes,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Storm {
  deliveries: number;
  paused: { working: number; wrote: number };
  /** Answers to a delivery Pub/Sub had already handed to another consumer. */
  lateAnswers: number;
  acked: Set<string>;
  seconds: number;
}

/** Deliver ORDERS orders through CONSUMERS consumers that get frozen; resolves when all are acked and every consumer has answered all it was handed. */
async function storm(config: PauseChildConfig): Promise<Storm> {
  const started = Date.now();
  const result: Storm = {
    deliveries: 0,
    paused: { working: 0, wrote: 0 },
    lateAnswers: 0,
    acked: new Set(),
    seconds: 0,
  };
  const pending: string[] = Array.from({ length: ORDERS }, (_, i) => `order-${i}`);
  const latest = new Map<string, number>();
  const firstDelivery = new Map<string, number>();
  const deadlines = new Map<number, NodeJS.Timeout>();

  interface Consumer {
    child: ChildProcess;
    ready: boolean;
    paused: boolean;
    holding: Set<number>;
  }
  const consumers: Consumer[] = [];
  let finish: () => void = () => {};
  let fail: (error: Error) => void = () => {};
  const finished = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const settled = () =>
    result.acked.size === ORDERS && consumers.every((c) => !c.paused && c.holding.size === 0);
  const redeliver = (id: string) =>
    setTimeout(() => {
      if (!result.acked.has(id)) {
        pending.push(id);
        dispatch();
      }
    }, REDELIVERY_MS);

  const dispatch = () => {
    for (const consumer of consumers) {
      if (!consumer.ready || consumer.paused) continue;
      while (consumer.holding.size < IN_FLIGHT && pending.length > 0) {
        const id = pending.shift()!;
        if (result.acked.has(id)) continue;
        const delivery = ++result.deliveries;
        latest.set(id, delivery);
        if (!firstDelivery.has(id)) firstDelivery.set(id, delivery);
        consumer.holding.add(delivery);
        deadlines.set(
          delivery,
          setTimeout(() => {
            deadlines.delete(delivery);
            if (latest.get(id) === delivery) redeliver(id);
          }, ACK_DEADLINE_MS),
        );
        consumer.child.send({ id, delivery } satisfies PauseMessage);
      }
    }
  };
  const freeze = (consumer: Consumer, point: PauseProgress["progress"]) => {
    if (consumer.paused) return;
    consumer.paused = true;
    result.paused[point]++;
    consumer.child.kill("SIGSTOP");
    setTimeout(() => {
      consumer.child.kill("SIGCONT");
      consumer.paused = false;
      dispatch();
    }, PAUSE_MS);
  };

  for (let slot = 0; slot < CONSUMERS; slot++) {
    const child = fork(join(here, "../support/pause-child.ts"), [JSON.stringify(config)], {
      execArgv: ["--import", "tsx", "--import", join(here, "../../scripts/text-loader.mjs")],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const consumer: Consumer = { child, ready: false, paused: false, holding: new Set() };
    consumers.push(consumer);
    child.on("exit", (code, signal) => {
      if (!settled()) fail(new Error(`consumer ${slot} exited (${code ?? signal}) mid-storm`));
    });
    child.on("message", (raw: PauseAnswer | PauseProgress | { ready: true }) => {
      if ("ready" in raw) {
        consumer.ready = true;
        dispatch();
        return;
      }
      if ("progress" in raw) {
        const order = Number(raw.id.slice(raw.id.lastIndexOf("-") + 1));
        if (firstDelivery.get(raw.id) === raw.delivery && FREEZE_AT[raw.progress](order)) {
          freeze(consumer, raw.progress);
        }
        return;
      }
      consumer.holding.delete(raw.delivery);
      clearTimeout(deadlines.get(raw.delivery));
      deadlines.delete(raw.delivery);
      if (latest.get(raw.id) !== raw.delivery) result.lateAnswers++;
      if (raw.outcome === "ran" || raw.outcome === "duplicate") {
        result.acked.add(raw.id);
      } else if (latest.get(raw.id) === raw.delivery) {
        redeliver(raw.id);
      }
      if (settled()) finish();
      dispatch();
    });
  }
  try {
    await finished;
  } finally {
    for (const timer of deadlines.values()) clearTimeout(timer);
    for (const consumer of consumers) {
      consumer.child.removeAllListeners("exit");
      consumer.child.kill("SIGCONT");
      consumer.child.kill("SIGKILL");
    }
  }
  result.seconds = (Date.now() - started) / 1000;
  return result;
}

/** Orders with more than one accepted write from different deliveries: the effect twice. */
function doubled(writes: readonly Write[], fenced: boolean): string[] {
  const byOrder = new Map<string, Write[]>();
  for (const write of writes.filter((w) => w.accepted)) {
    byOrder.set(write.order, [...(byOrder.get(write.order) ?? []), write]);
  }
  // A fenced sink keeps one record per order: a higher fence replaces it, it is not a second.
  if (fenced) return [];
  return [...byOrder].filter(([, list]) => list.length > 1).map(([order]) => order);
}

function report(guard: Guard, s: Storm, figures: Record<string, number>): void {
  console.info(
    `[pause storm] ${guard}: ${s.acked.size} orders acked, ${s.deliveries} deliveries, ` +
      `${s.paused.working} consumers frozen before the effect and ${s.paused.wrote} after it ` +
      `(${PAUSE_MS} ms each, lease ${LEASE_MS} ms), ${s.lateAnswers} late answers, ` +
      `${Object.entries(figures)
        .map(([k, v]) => `${v} ${k}`)
        .join(", ")}, ${s.seconds.toFixed(1)} s`,
  );
}

const redis = await startOrSkip("Redis", findOrStartRedis);
const postgres = await startOrSkip("PostgreSQL", startPostgres);
afterAll(async () => {
  await postgres?.drop();
});

/**
 * Orders whose last accepted write carries another fence than the DONE record: a body that
 * lost its key wrote after the holder that completed it.
 */
async function ordersNotLastWrittenByTheirCompleter(
  records: string,
  writes: readonly Write[],
): Promise<string[]> {
  const client = new Redis(redis!.url);
  try {
    const backend = new RedisLock({ client, prefix: records });
    const last = new Map<string, number>();
    for (const write of writes) if (write.accepted) last.set(write.order, write.fence);
    const wrong: string[] = [];
    for (const [order, fence] of last) {
      const record = await backend.inspect(order);
      if (record?.state !== "done" || record.fencingId !== fence) wrong.push(order);
    }
    return wrong;
  } finally {
    client.disconnect();
  }
}

const prefix = () =>
  `pause-storm:${Date.now().toString(36)}:${Math.random().toString(36).slice(2)}:`;

/** A lock run on Redis with its sink; what the sink saw, per order. */
async function lockRun(guard: Exclude<Guard, "transaction">) {
  const sink = await startSink(guard === "fence");
  const records = prefix();
  try {
    const s = await storm({
      guard,
      store: redis!.url,
      records,
      sink: sink.url,
      leaseMs: LEASE_MS,
      workMs: WORK_MS,
    });
    const accepted = new Set(sink.writes.filter((w) => w.accepted).map((w) => w.order));
    const lastWriter = await ordersNotLastWrittenByTheirCompleter(records, sink.writes);
    const figures = {
      "orders whose last write is not the completing holder's": lastWriter.length,
      writes: sink.writes.length,
      "stale writes (a higher fence had written)": sink.writes.filter((w) => w.stale).length,
      "stale writes refused": sink.writes.filter((w) => !w.accepted).length,
      "orders written twice": doubled(sink.writes, guard === "fence").length,
      "orders without a write": ORDERS - accepted.size,
    };
    report(guard, s, figures);
    return { s, sink, accepted, figures };
  } finally {
    await sink.close();
  }
}

describe.skipIf(!redis || !postgres)("pause storm: holders frozen past their lease", () => {
  it("control: with neither fence, transaction nor signal, a resumed body writes its order twice", async () => {
    const { s, figures } = await lockRun("none");
    expect(s.acked.size).toBe(ORDERS);
    expect(s.paused.working).toBeGreaterThan(0);
    expect(figures["orders written twice"]).toBeGreaterThan(0);
  }, 180_000);

  it("fence: the sink refuses every resumed body's stale write; one effect per order, all acked", async () => {
    const { s, sink, accepted, figures } = await lockRun("fence");
    expect(s.acked.size).toBe(ORDERS);
    expect(s.paused.working).toBeGreaterThan(0);
    expect(figures["stale writes refused"]).toBeGreaterThan(0);
    expect(sink.writes.filter((w) => w.accepted && w.stale)).toEqual([]);
    expect(accepted.size).toBe(ORDERS);
    expect(figures["orders whose last write is not the completing holder's"]).toBe(0);
  }, 180_000);

  it("transaction: a resumed body's rows roll back with its fenced-out commit; one row per order", async () => {
    const pool = postgres!.pool(2);
    const records = "pause_records";
    await new SqlLock({ client: pool, table: records }).ensureSchema();
    await pool.query("CREATE TABLE pause_orders (msg text NOT NULL, delivery int NOT NULL)");
    const s = await storm({
      guard: "transaction",
      store: postgres!.url,
      records,
      sink: "pause_orders",
      leaseMs: LEASE_MS,
      workMs: WORK_MS,
    });
    const { rows } = await pool.query<{ msg: string; n: string }>(
      "SELECT msg, count(*) AS n FROM pause_orders GROUP BY msg",
    );
    const twice = rows.filter((row) => Number(row.n) !== 1);
    report("transaction", s, {
      "orders with rows": rows.length,
      "orders written twice": twice.length,
    });
    await pool.end();
    expect(s.acked.size).toBe(ORDERS);
    expect(s.paused.working).toBeGreaterThan(0);
    expect(rows).toHaveLength(ORDERS);
    expect(twice).toEqual([]);
  }, 180_000);

  it("signal: the heartbeat stops most resumed bodies, yet not all, and an effect made before a pause is made again", async () => {
    // Not a guarantee, and this run says so: a resumed body's own timer can fire before the
    // heartbeat's lapse timer (it was due first), so it passes its signal check and writes;
    // and a body frozen after its effect cannot unmake it. Fence or transaction close both.
    const { s, figures } = await lockRun("signal");
    expect(s.acked.size).toBe(ORDERS);
    expect(figures["orders without a write"]).toBe(0);
    expect(s.paused.wrote).toBeGreaterThan(0);
    expect(figures["orders written twice"]).toBeGreaterThan(0);
  }, 180_000);
});
