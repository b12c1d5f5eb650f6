/**
 * A worker that crashes mid-body: it claims each order it is given, sends it to the
 * supplier, and then exits the process before any `complete` — the crash window that
 * "key your sink" closes. The claims stay behind until their lease lapses.
 *
 * Run by main.ts with child_process.fork; it reads one IPC message and never returns.
 */
import { lock } from "gcp-pubsub-idempotency";
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
}

process.once("message", async (job: CrashJob) => {
  const { lock: backend } = await openBackend(job.backend, job.config);
  // This process's client is new: its first writes (a channel to open, a cold emulator) take
  // seconds on a busy machine, and a Datastore or Firestore claim slower than its lease
  // answers held. Warm it first, and give the claims a lease well above its slowest call.
  const { slowestMs } = await warmUpBackend(backend, { keyPrefix: `warm-up:${process.pid}:` });
  const leaseMs = Math.min(Math.max(job.leaseMs, 10 * slowestMs), job.maxLeaseMs);
  let sent = 0;
  const never = new Promise<never>(() => {});
  for (const { orderId, key } of job.orders) {
    void lock(key, { backend, leaseMs, logger: silentLogger }, async () => {
      await sendOrder(job.supplierUrl, orderId, key);
      sent += 1;
      // The last send done: die with every claim still open (no complete, no release).
      if (sent === job.orders.length) process.send?.({ sent }, () => process.exit(0));
      return never;
    }).catch((error: unknown) => {
      console.error(`crash worker: ${String(error)}`);
      process.exit(3);
    });
  }
});
