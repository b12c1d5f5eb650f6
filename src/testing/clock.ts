/**
 * A clock whose time moves only when told: pass `now` to `InMemoryLock`, and a test can
 * lapse a lease or a ttl without sleeping.
 *
 * @example
 * ```ts
 * import { InMemoryLock } from "gcp-pubsub-idempotency";
 * import { createFakeClock, type FakeClock } from "gcp-pubsub-idempotency/testing";
 *
 * const clock: FakeClock = createFakeClock();
 * const backend = new InMemoryLock({ now: clock.now });
 * await backend.claim("orders:42", 1_000); // won
 * clock.advance(1_000);
 * await backend.claim("orders:42", 1_000); // won again: the lease lapsed
 * ```
 */
export interface FakeClock {
  /** The current time, epoch ms. */
  now(): number;
  /** Move time forward by `ms`; throws a RangeError for a negative `ms`. */
  advance(ms: number): void;
  /** Jump to an absolute time, epoch ms (backwards too). */
  set(epochMs: number): void;
}

/**
 * A {@link FakeClock} starting at `startMs` (epoch ms; default 2026-01-01T00:00:00Z). Its
 * methods are bound, so `clock.now` can be passed on its own.
 *
 * @example
 * ```ts
 * import { InMemoryLock } from "gcp-pubsub-idempotency";
 * import { createFakeClock } from "gcp-pubsub-idempotency/testing";
 *
 * const clock = createFakeClock(Date.UTC(2030, 0, 1));
 * const backend = new InMemoryLock({ ttlMs: 60_000, now: clock.now });
 * clock.advance(60_000); // a completed key would now be claimable again
 * ```
 */
export function createFakeClock(startMs = Date.UTC(2026, 0, 1)): FakeClock {
  let current = startMs;
  return {
    now: () => current,
    advance: (ms) => {
      if (!(ms >= 0)) throw new RangeError(`a fake clock only moves forward, got ${ms}`);
      current += ms;
    },
    set: (epochMs) => {
      current = epochMs;
    },
  };
}
