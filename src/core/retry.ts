// The one backoff of the package: the verbs wait out a held key with it, and every backend
// that retries a transient store error does so through withRetry.

/** Bounds of a full-jitter exponential backoff, whole ms. */
export interface Backoff {
  /** The first pause's ceiling; it doubles per attempt up to `maxDelayMs`. */
  readonly baseDelayMs: number;
  /** The largest ceiling. */
  readonly maxDelayMs: number;
}

/** A backoff bounded both in attempts and in the time since the first attempt. */
export interface RetryPolicy extends Backoff {
  /** Attempts in all, the first included. */
  readonly attempts: number;
  /** No retry starts once its pause would end later than this after the first attempt. */
  readonly maxElapsedMs: number;
}

/**
 * The pause after attempt `n` (1, 2, …): a random share of min(maxDelayMs, baseDelayMs ·
 * 2^(n−1)). Full jitter spreads contending callers apart instead of letting them meet again.
 */
export function backoffDelay(backoff: Backoff, n: number): number {
  const ceiling = Math.min(backoff.maxDelayMs, backoff.baseDelayMs * 2 ** (n - 1));
  return Math.round(Math.random() * ceiling);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Run `attempt` until it resolves, retrying the errors `isTransient` accepts with
 * {@link backoffDelay} until `policy` runs out; then the last error is rethrown as it is.
 */
export async function withRetry<T>(
  policy: RetryPolicy,
  isTransient: (error: unknown) => boolean,
  attempt: (n: number) => Promise<T>,
): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!isTransient(error) || n >= policy.attempts) throw error;
      const delay = backoffDelay(policy, n);
      if (Date.now() - started + delay > policy.maxElapsedMs) throw error;
      await sleep(delay);
    }
  }
}
