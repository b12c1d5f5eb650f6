import { randomBytes } from "node:crypto";
import { InvalidConfiguration } from "../../core/errors.js";
import { assertNonNegativeMs, describe, readOptions } from "../../core/validate.js";

/**
 * Bounds on the retry of transient store errors (ABORTED contention, UNAVAILABLE,
 * DEADLINE_EXCEEDED, the emulator's lock timeout) by `DatastoreLock` and `FirestoreLock`:
 * full-jitter exponential backoff until either bound is reached, then the call rejects
 * with a `BackendError`.
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
  attempts?: number;
  /** Stop retrying once this much time has passed since the first attempt, whole ms; default 15 s. */
  maxElapsedMs?: number;
  /** First backoff ceiling, whole ms (0 allowed); doubles per attempt up to `maxDelayMs`. Default 25 ms. */
  baseDelayMs?: number;
  /** Largest backoff ceiling, whole ms (0 allowed); default 1 s. */
  maxDelayMs?: number;
}

export interface ResolvedRetry {
  attempts: number;
  maxElapsedMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/** The most attempts `retry.attempts` may ask for: enough for any contention, never endless. */
export const MAX_RETRY_ATTEMPTS = 100;

const RETRY_NAMES = ["attempts", "maxElapsedMs", "baseDelayMs", "maxDelayMs"] as const;

/**
 * Check a `retry` option once, in the constructor: an object (or absent) whose known fields
 * are whole numbers in range; anything else is an {@link InvalidConfiguration} naming the
 * field. `NaN` attempts used to retry a dead store for ever.
 */
export function resolveRetry(options: unknown): ResolvedRetry {
  const read = readOptions("retry", options, true, RETRY_NAMES);
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

/** gRPC status codes: ABORTED (contention), UNAVAILABLE, DEADLINE_EXCEEDED. */
const RETRYABLE_CODES = new Set([10, 14, 4]);

/** Transient: contention, an unreachable server, or the emulator's lock timeout. */
export function isTransient(error: unknown): boolean {
  if (error === null || typeof error !== "object") return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "number" && RETRYABLE_CODES.has(code)) return true;
  const message = (error as { message?: unknown }).message;
  return typeof message === "string" && /lock timeout|too much contention/i.test(message);
}

/**
 * Run `attempt` until it resolves, retrying transient errors with full-jitter exponential
 * backoff, bounded both in attempts and in total time. The last error is rethrown.
 */
export async function withRetry<T>(
  retry: ResolvedRetry,
  attempt: (n: number) => Promise<T>,
): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!isTransient(error) || n >= retry.attempts) throw error;
      const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (n - 1));
      const delay = Math.round(Math.random() * ceiling);
      if (Date.now() - started + delay > retry.maxElapsedMs) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** A per-claim random token: lets a retried claim recognise its own landed commit. */
export function newToken(): string {
  return randomBytes(12).toString("base64url");
}
