/**
 * A worker that crashes mid-body: it claims each order it is given, sends it to the
 * supplier, and then exits the process before any `complete` — the crash window that
 * "key your sink" closes. The claims stay behind until their lease lapses.
 *
 * Run by main.ts with child_process.fork; it reads one IPC message and never returns.
 */
import { lock } from "gcp-pubsub-idempotency";
import { type BackendConfig, type BackendName, openBackend } from "./backends.js";
import { sendOrder } from "./supplier.js";

export interface CrashJob {
  readonly backend: BackendName;
  readonly config: BackendConfig;
  readonly supplierUrl: string;
  readonly leaseMs: number;
  readonly orders: readonly { orderId: string; key: string }[];
}

const quiet = { info() {}, warn() {}, error() {} };

process.once("message", async (job: CrashJob) => {
  const { lock: backend } = await openBackend(job.backend, job.config);
  let sent = 0;
  const never = new Promise<never>(() => {});
  for (const { orderId, key } of job.orders) {
    void lock(key, { backend, leaseMs: job.leaseMs, logger: quiet }, async () => {
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
