/**
 * The gateway's own cost: lock() cycles per second over a backend that answers at once,
 * beside the same number of bare backend calls (the floor), on one core.
 *
 *   npx tsx bench/gateway.ts [--quick]
 */
import { type Claim, type ClaimOutcome, type LockBackend, lock } from "gcp-pubsub-idempotency";

const quick = process.argv.includes("--quick");
const N = quick ? 200_000 : 2_000_000;

/** Always wins, completes and releases: no store at all, so only our own work is timed. */
class InstantBackend implements LockBackend {
  private fence = 0;
  async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    this.fence++;
    return { status: "won", claim: { key, fencingId: this.fence, leaseExpiresAt: leaseMs } };
  }
  async complete(_claim: Claim): Promise<boolean> {
    return true;
  }
  async release(_claim: Claim): Promise<void> {}
}

async function time(label: string, fn: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 10_000; i++) await fn(i); // warm up the JIT
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await fn(i);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const rate = N / seconds;
  console.log(`${label.padEnd(34)} ${Math.round(rate).toLocaleString("en-US").padStart(12)} /s`);
  return rate;
}

const backend = new InstantBackend();
const options = { backend, leaseMs: 60_000 };
const body = () => undefined;

const floor = await time("floor: claim + complete, bare", async () => {
  const out = await backend.claim("k", 60_000);
  if (out.status === "won") await backend.complete(out.claim);
});
const gateway = await time("lock(): claim → body → complete", () =>
  lock("order-123", options, body),
);
console.log(`gateway / floor: ${(gateway / floor).toFixed(2)}x`);
const withSignal = await time("lock(), body takes its signal", () =>
  lock("order-123", options, (_claim, signal) => signal.aborted),
);
console.log(`with a signal / floor: ${(withSignal / floor).toFixed(2)}x`);
