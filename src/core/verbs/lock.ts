// lock() and mutex(): thin facades over the claim cycle (engine/cycle.ts), which completes
// the key after a lock's body and releases it after a mutex's.
import type { FingerprintOption, GuardedBody, LockOptions, StepsOption } from "../types.js";
import { runVerb, type VerbBody } from "./run-verb.js";

/** Their bodies already have the engine's shape: (claim, signal). */
const GUARDED: VerbBody<GuardedBody<unknown>, unknown> = { signalAt: 1, adapt: (body) => body };

/**
 * Run `body` at most once per `key`: claim → body → complete. A completed key rejects
 * with {@link Duplicate}; a key held elsewhere rejects with {@link InProgress}. A body
 * that throws releases its claim and its error propagates.
 *
 * Rejects with {@link InvalidKey} or {@link InvalidConfiguration} before any I/O, and with
 * a {@link BackendError} when the claim itself fails. A `complete` that fails or is fenced
 * out after the body succeeded is logged, not raised: re-raising would repeat the work.
 *
 * @example
 * ```ts
 * import { Duplicate, InMemoryLock, lock } from "gcp-pubsub-idempotency";
 *
 * declare function sendOrder(po: string): Promise<void>;
 * const backend = new InMemoryLock();
 * const po = "4711";
 * await lock(`orders:${po}`, { backend }, async () => sendOrder(po)).catch((error) => {
 *   if (!(error instanceof Duplicate)) throw error; // InProgress or the body's error: nack
 * });
 * ```
 */
export function lock<T>(
  key: string,
  options: LockOptions & FingerprintOption & StepsOption,
  body: GuardedBody<T>,
): Promise<T> {
  return runVerb("lock", "lock()", key, options, body, GUARDED as VerbBody<GuardedBody<T>, T>);
}

/**
 * Run `body` with no other holder of `key` at the same time: claim → body → release,
 * always. It never completes, so every message for the key runs, one at a time. A key
 * held elsewhere, or completed by {@link lock}, rejects with {@link InProgress}.
 *
 * A failed `release` after the body ran is logged, not raised; the key frees when its
 * lease lapses.
 *
 * @example
 * ```ts
 * import { InMemoryLock, mutex } from "gcp-pubsub-idempotency";
 *
 * declare function applyStatusUpdate(po: string, status: string): Promise<void>;
 * const backend = new InMemoryLock();
 * // Every update of the PO runs, never two at once; a concurrent one rejects InProgress.
 * await mutex("po:4711", { backend }, async () => applyStatusUpdate("4711", "shipped"));
 * ```
 */
export function mutex<T>(
  key: string,
  options: LockOptions & FingerprintOption,
  body: GuardedBody<T>,
): Promise<T> {
  return runVerb("mutex", "mutex()", key, options, body, GUARDED as VerbBody<GuardedBody<T>, T>);
}
