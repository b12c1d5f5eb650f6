/**
 * The gateway's own cost: lock() cycles per second over a backend that answers at once,
 * beside the same backend calls made bare (the floor), sequentially, so on one core.
 */
import { type Claim, type ClaimOutcome, type LockBackend, lock } from "gcp-pubsub-idempotency";

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

export interface GatewayResult {
  cycles: number;
  /** claim + complete called bare, per second */
  floor: number;
  /** lock() with a body that takes no signal */
  lock: number;
  /** lock() with a body that declares the signal (an AbortController per call) */
  withSignal: number;
}

async function rate(n: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(n, 20_000); i++) await fn(); // warm up the JIT
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

export async function gatewayBench(cycles: number): Promise<GatewayResult> {
  const backend = new InstantBackend();
  const options = { backend, leaseMs: 60_000 };
  const floor = await rate(cycles, async () => {
    const out = await backend.claim("k", 60_000);
    if (out.status === "won") await backend.complete(out.claim);
  });
  const plain = await rate(cycles, () => lock("order-123", options, () => undefined));
  const withSignal = await rate(cycles, () =>
    lock("order-123", options, (_claim, signal) => signal.aborted),
  );
  return { cycles, floor, lock: plain, withSignal };
}
