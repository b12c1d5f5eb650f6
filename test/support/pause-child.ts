// A consumer process for the pause storm (test/faults/pause-storm.test.ts): it takes messages
// from its parent, as Pub/Sub would deliver them, runs each order through the verb of its
// `guard`, and answers how it went. Around the body's effect it tells the parent where it is
// ("working": the body started and has not made its effect; "wrote": the effect is made, the
// key is not yet DONE), so the parent can freeze it there with SIGSTOP.
//
// Guards, one per run:
// - `none` (the control): lock() on Redis; the body appends its order to the sink, no fence.
// - `fence`: the same, and the sink refuses a write whose fence is below one it has seen.
// - `signal`: lock() with a heartbeat; the body honours its signal before and during the write.
// - `transaction`: lockInTransaction on PostgreSQL; the body INSERTs into a plain table.
import { Redis } from "ioredis";
import pg from "pg";
import { RedisLock } from "../../src/backends/redis/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import { Duplicate, InProgress, lock, lockInTransaction } from "../../src/index.js";

export type Guard = "none" | "fence" | "signal" | "transaction";

export interface PauseChildConfig {
  readonly guard: Guard;
  /** Redis URL (lock guards) or PostgreSQL URL (transaction). */
  readonly store: string;
  /** The Redis key prefix, or the records table. */
  readonly records: string;
  /** The sink's URL (lock guards) or the orders table (transaction). */
  readonly sink: string;
  readonly leaseMs: number;
  /** How long a body works before its effect. */
  readonly workMs: number;
}

export interface PauseMessage {
  readonly id: string;
  readonly delivery: number;
}

/** Where a body is, for the parent to freeze it there. */
export interface PauseProgress {
  readonly progress: "working" | "wrote";
  readonly id: string;
  readonly delivery: number;
}

export interface PauseAnswer {
  readonly id: string;
  readonly delivery: number;
  readonly outcome: "ran" | "duplicate" | "held" | "failed";
  readonly error?: string;
}

const config = JSON.parse(process.argv[2] ?? "{}") as PauseChildConfig;
const silent = { info() {}, warn() {}, error() {} };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const tell = (progress: PauseProgress["progress"], message: PauseMessage) =>
  process.send?.({ progress, id: message.id, delivery: message.delivery } satisfies PauseProgress);

type Handle = (message: PauseMessage) => Promise<void>;

function onRedis(): Handle {
  const client = new Redis(config.store);
  const backend = new RedisLock({ client, prefix: config.records });
  // Not given the signal: aborting a write in flight cannot unmake it, only hide that it landed.
  const write = async (message: PauseMessage, fence: number) => {
    const response = await fetch(config.sink, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ order: message.id, fence, delivery: message.delivery }),
    });
    // 409: the sink refused a fence below one it has seen; the body's run is void.
    if (response.status === 409) throw new Error(`sink refused fence ${fence}`);
    if (!response.ok) throw new Error(`sink answered ${response.status}`);
  };
  if (config.guard === "signal") {
    const options = { backend, leaseMs: config.leaseMs, heartbeat: true, logger: silent };
    return (message) =>
      lock(message.id, options, async (claim, signal) => {
        tell("working", message);
        await sleep(config.workMs);
        signal.throwIfAborted();
        await write(message, claim.fencingId);
        tell("wrote", message);
        await sleep(config.workMs);
      });
  }
  const options = { backend, leaseMs: config.leaseMs, logger: silent };
  return (message) =>
    lock(message.id, options, async (claim) => {
      tell("working", message);
      await sleep(config.workMs);
      await write(message, claim.fencingId);
      tell("wrote", message);
      await sleep(config.workMs);
    });
}

function onPostgres(): Handle {
  const pool = new pg.Pool({ connectionString: config.store, max: 8 });
  const backend = new SqlLock({ client: pool, table: config.records });
  const insert = `INSERT INTO ${config.sink} (msg, delivery) VALUES ($1, $2)`;
  const options = { backend, leaseMs: config.leaseMs, logger: silent };
  return (message) =>
    lockInTransaction(message.id, options, async (tx) => {
      tell("working", message);
      await sleep(config.workMs);
      await tx.query({ name: "pause_order", text: insert, values: [message.id, message.delivery] });
      tell("wrote", message);
      await sleep(config.workMs);
    });
}

const handle = config.guard === "transaction" ? onPostgres() : onRedis();

process.on("message", async (message: PauseMessage) => {
  let answer: PauseAnswer;
  try {
    await handle(message);
    answer = { id: message.id, delivery: message.delivery, outcome: "ran" };
  } catch (error) {
    const outcome =
      error instanceof Duplicate ? "duplicate" : error instanceof InProgress ? "held" : "failed";
    answer = { id: message.id, delivery: message.delivery, outcome, error: String(error) };
  }
  process.send?.(answer);
});
process.send?.({ ready: true });
