/**
 * Local development, no Google Cloud needed: an in-memory backend, a few orders, a
 * redelivered duplicate, and a holder that "crashes" mid-work and heals after its lease.
 *
 *   npm run demo
 */
import { Duplicate, InMemoryLock, InProgress, lock } from "gcp-pubsub-idempotency";

const backend = new InMemoryLock();
const quiet = { info() {}, warn() {}, error() {} };
const options = { backend, leaseMs: 200, logger: quiet };
const supplier = new Map<string, number>();

async function sendOrder(orderId: string): Promise<void> {
  supplier.set(orderId, (supplier.get(orderId) ?? 0) + 1);
}

async function deliver(orderId: string, note: string): Promise<void> {
  try {
    await lock(`orders:${orderId}`, options, (claim) => {
      console.log(`  ${note.padEnd(28)} ${orderId}: body runs (fence ${claim.fencingId})`);
      return sendOrder(orderId);
    });
  } catch (error) {
    if (error instanceof Duplicate) {
      console.log(`  ${note.padEnd(28)} ${orderId}: duplicate, body skipped -> ack`);
    } else if (error instanceof InProgress) {
      console.log(`  ${note.padEnd(28)} ${orderId}: held by a live holder -> nack, retry later`);
    } else {
      throw error;
    }
  }
}

console.log("1. three orders, each delivered once");
for (const id of ["po-1", "po-2", "po-3"]) await deliver(id, "first delivery");

console.log("2. Pub/Sub redelivers po-2");
await deliver("po-2", "redelivery");

console.log("3. a worker claims po-4 and crashes before finishing");
await backend.claim("orders:po-4", options.leaseMs); // it never completes nor releases
await deliver("po-4", "redelivery during the lease");
await new Promise((r) => setTimeout(r, options.leaseMs + 20));
await deliver("po-4", "redelivery after the lease");

console.log("\nsupplier received:");
for (const [id, count] of supplier) console.log(`  ${id}: ${count}×`);
const exactlyOnce = [...supplier.values()].every((n) => n === 1) && supplier.size === 4;
console.log(exactlyOnce ? "every order exactly once" : "SOMETHING RAN TWICE");
process.exitCode = exactlyOnce ? 0 : 1;
