import { InvalidConfiguration } from "../../core/errors.js";
import type { RetryPolicy } from "../../core/retry.js";
import { assertNonNegativeMs, describe, readOptions } from "../../core/validate.js";

/**
 * Bounds on the retry of transient store errors (ABORTED contention, UNAVAILABLE,
 * DEADLINE_EXCEEDED, the emulator's lock timeout) by `DatastoreLock`, `FirestoreLock` and
 * `SpannerLock`: full-jitter exponential backoff until either bound is reached, then the call
 * rejects with a `BackendError`.
 *
 * The constructor checks every field: `attempts` a whole number from 1 to 100, the others
 * whole milliseconds from 0 to 2^31 − 1 (`MAX_LEASE_MS`); anything else throws an
 * `InvalidConfiguration` naming the field.
 *
 * @example
 * ```ts
 * import { DatastoreLock, type RetryOptions } from "gcp-pubsub-idempotency/datastore";
 *
 * // Fail fast in a request path: 4 attempts within 2 s.
 * const retry: RetryOptions = { attempts: 4, maxElapsedMs: 2_000 };
 * const backend = new DatastoreLock({ retry });
 * ```
 */
export interface RetryOptions {
  /** Attempts in all, the first included: a whole number from 1 to 100; default 10. */
  attempts?: number | undefined;
  /** Stop retrying once this much time has passed since the first attempt, whole ms; default 15 s. */
  maxElapsedMs?: number | undefined;
  /** First backoff ceiling, whole ms (0 allowed); doubles per attempt up to `maxDelayMs`. Default 25 ms. */
  baseDelayMs?: number | undefined;
  /** Largest backoff ceiling, whole ms (0 allowed); default 1 s. */
  maxDelayMs?: number | undefined;
}

/** The most attempts `retry.attempts` may ask for: enough for any contention, never endless. */
export const MAX_RETRY_ATTEMPTS = 100;

const RETRY_NAMES = ["attempts", "maxElapsedMs", "baseDelayMs", "maxDelayMs"] as const;

/**
 * Check a `retry` option once, in the constructor: an object (or absent) whose known fields
 * are whole numbers in range; anything else is an {@link InvalidConfiguration} naming the
 * field. `NaN` attempts used to retry a dead store for ever.
 */
export function resolveRetry(options: unknown, owner?: string): RetryPolicy {
  const read = readOptions(
    owner === undefined ? "retry" : `${owner} options.retry`,
    options,
    true,
    RETRY_NAMES,
  );
  const attempts = read.attempts === undefined ? 10 : read.attempts;
  if (
    typeof attempts !== "number" ||
    !Number.isSafeInteger(attempts) ||
    attempts < 1 ||
    attempts > MAX_RETRY_ATTEMPTS
  ) {
    throw new InvalidConfiguration(
      `retry.attempts must be a whole number from 1 to ${MAX_RETRY_ATTEMPTS}, got ${describe(attempts)}`,
    );
  }
  const ms = (name: (typeof RETRY_NAMES)[number], fallback: number): number => {
    const value = read[name] === undefined ? fallback : read[name];
    assertNonNegativeMs(`retry.${name}`, value);
    return value;
  };
  return {
    attempts,
    maxElapsedMs: ms("maxElapsedMs", 15_000),
    baseDelayMs: ms("baseDelayMs", 25),
    maxDelayMs: ms("maxDelayMs", 1_000),
  };
}
