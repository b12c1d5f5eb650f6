/**
 * A worker that crashes mid-body. With the supplier sink it claims each order it is given,
 * sends it to the supplier, and then exits the process before any `complete` — the crash
 * window that "key your sink" closes. With the transactional sink it claims each order with
 * lockInTransaction, INSERTs the order row and exits before the commit: the database rolls
 * the rows back. With the steps sink it runs the order's first step (the charge, recorded) and
 * exits before the second. Either way the claims stay behind until their lease lapses.
 *
 * Run by main.ts with child_process.fork; it reads one IPC message and never returns.
 */
import { lock, lockInTransaction, step } from "gcp-pubsub-idempotency";
import { warmUpBackend } from "gcp-pubsub-idempotency/testing";
import { silentLogger } from "../../test/support/logger.js";
import { sendOrder } from "../../test/support/supplier.js";
import { type BackendConfig, type BackendName, openBackend } from "./backends.js";

export interface CrashJob {
  readonly backend: BackendName;
  readonly config: BackendConfig;
  readonly supplierUrl: string;
  /** The lease of each claim, or ten times the store's slowest warm call, up to maxLeaseMs. */
  readonly leaseMs: number;
  readonly maxLeaseMs: number;
  readonly orders: readonly { orderId: string; key: string }[];
  /** The transactional sink: insert the order row, die before the commit. */
  readonly transaction: boolean;
  /** The steps sink: run the charge step, die before the shipment. */
  readonly steps: boolean;
}

/**
 * A transaction holds a connection until it ends, so a pool (or SQLite's one connection)
 * opens only so many at once; the rest of the orders stay claimed, waiting for one. Die once
 * every order is written, or once no new one has been for this long.
 */
const IDLE_DEATH_MS = 500;

process.once("message", async (job: CrashJob) => {
  const { lock: backend, sink } = await openBackend(job.backend, job.config);
  // This process's client is new: its first writes (a channel to open, a cold emulator) take
  // seconds on a busy machine, and a Datastore or Firestore claim slower than its lease
  // answers held. Warm it first, and give the claims a lease well above its slowest call.
  const { slowestMs } = await warmUpBackend(backend, { keyPrefix: `warm-up:${process.pid}:` });
  const leaseMs = Math.min(Math.max(job.leaseMs, 10 * slowestMs), job.maxLeaseMs);
  let sent = 0;
  let idle: NodeJS.Timeout | undefined;
  const die = () => process.send?.({ sent }, () => process.exit(0));
  const never = new Promise<never>(() => {});
  const written = (): Promise<never> => {
    sent += 1;
    // The last write done: die with every claim still open (no complete, no release).
    clearTimeout(idle);
    if (sent === job.orders.length) die();
    else idle = setTimeout(die, IDLE_DEATH_MS);
    return never;
  };
  const failed = (error: unknown) => {
    console.error(`crash worker: ${String(error)}`);
    process.exit(3);
  };
  const options = { leaseMs, logger: silentLogger };
  for (const { orderId, key } of job.orders) {
    if (job.steps) {
      void lock(key, { ...options, backend, steps: true }, async () => {
        await step("charge", async () => {
          await sendOrder(
            job.supplierUrl,
            `${orderId}:charge`,
            `charge:${orderId}:${Math.random()}`,
          );
          return `charge-of-${orderId}`;
        });
        return written();
      }).catch(failed);
    } else if (job.transaction && sink) {
      void lockInTransaction(key, { ...options, backend: sink.lock }, async (tx) => {
        await sink.insert(tx, orderId);
        return written();
      }).catch(failed);
    } else {
      void lock(key, { ...options, backend }, async () => {
        await sendOrder(job.supplierUrl, orderId, key);
        return written();
      }).catch(failed);
    }
  }
});
