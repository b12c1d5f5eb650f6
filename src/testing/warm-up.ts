import type { LockBackend } from "../core/port.js";

/**
 * Options of {@link warmUpBackend}.
 *
 * @example
 * ```ts
 * import type { WarmUpOptions } from "gcp-pubsub-idempotency/testing";
 *
 * const options: WarmUpOptions = { rounds: 5, keyPrefix: "warm-up:worker-1:" };
 * ```
 */
export interface WarmUpOptions {
  /** Measured rounds after the first (cold) one; default 3. */
  rounds?: number;
  /** Prefix of the keys it claims; default `warm-up:` and a random tag, then a colon. */
  keyPrefix?: string;
}

/**
 * What {@link warmUpBackend} measured.
 *
 * @example
 * ```ts
 * import { InMemoryLock } from "gcp-pubsub-idempotency";
 * import { type WarmUpReport, warmUpBackend } from "gcp-pubsub-idempotency/testing";
 *
 * const report: WarmUpReport = await warmUpBackend(new InMemoryLock());
 * console.info(`cold round ${report.coldMs} ms, slowest warm call ${report.slowestMs} ms`);
 * ```
 */
export interface WarmUpReport {
  /** The first round in all, in ms: what a cold connection, pool or emulator cost. */
  coldMs: number;
  /** The slowest single call (claim, complete or release) of the measured rounds, in ms. */
  slowestMs: number;
}

const LONG_LEASE_MS = 60_000;

/**
 * Prime a backend and measure it: claim, complete and release a few keys of its own, first
 * once to pay for what is cold (a connection or pool to open, an emulator's first write),
 * then `rounds` more, timing every call. A test that wants a short lease sizes it from
 * `slowestMs`, so a loaded machine's slow write never outlasts a lease the test expects to
 * hold (`DatastoreLock` and `FirestoreLock` rightly answer `held` for a win that did).
 *
 * It never fails on an answer it did not expect (that is for the test to judge), only when
 * the backend throws. The keys it leaves behind are done or released records under
 * `keyPrefix`; give the backend a store of the test's own.
 *
 * @example
 * ```ts
 * import { RedisLock } from "gcp-pubsub-idempotency/redis";
 * import { warmUpBackend } from "gcp-pubsub-idempotency/testing";
 * import { Redis } from "ioredis";
 *
 * const backend = new RedisLock({ client: new Redis(), prefix: `test-${Date.now()}:` });
 * const { slowestMs } = await warmUpBackend(backend);
 * // A lease ten times the slowest call measured, and never under 150 ms.
 * const shortLeaseMs = Math.max(150, 10 * slowestMs);
 * ```
 */
export async function warmUpBackend(
  backend: LockBackend,
  options: WarmUpOptions = {},
): Promise<WarmUpReport> {
  const rounds = options.rounds ?? 3;
  if (!Number.isSafeInteger(rounds) || rounds < 0) {
    throw new RangeError(`rounds must be a non-negative integer, got ${rounds}`);
  }
  const prefix = options.keyPrefix ?? `warm-up:${Math.random().toString(36).slice(2, 10)}:`;
  let slowestMs = 0;
  let measuring = false;
  const timed = async <T>(call: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await call();
    } finally {
      if (measuring) slowestMs = Math.max(slowestMs, performance.now() - started);
    }
  };
  // One round walks every path a case takes: absent → won, held, complete, done, and a
  // release followed by a reclaim (a transaction on the stores that have them).
  const round = async (n: number) => {
    const done = `${prefix}${n}:done`;
    const first = await timed(() => backend.claim(done, LONG_LEASE_MS));
    await timed(() => backend.claim(done, LONG_LEASE_MS));
    if (first.status === "won") await timed(() => backend.complete(first.claim));
    await timed(() => backend.claim(done, LONG_LEASE_MS));
    const cycled = `${prefix}${n}:released`;
    for (let i = 0; i < 2; i++) {
      const outcome = await timed(() => backend.claim(cycled, LONG_LEASE_MS));
      if (outcome.status === "won") await timed(() => backend.release(outcome.claim));
    }
  };
  const coldStarted = performance.now();
  await round(0);
  const coldMs = Math.round(performance.now() - coldStarted);
  measuring = true;
  for (let n = 1; n <= rounds; n++) await round(n);
  return { coldMs, slowestMs: Math.ceil(slowestMs) };
}
