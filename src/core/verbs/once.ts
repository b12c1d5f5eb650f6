// once(): lock() that remembers. The body's result is written with the DONE record, in the
// same store call as complete, and every later call resolves to it.
import type { FingerprintOption, GuardedBody, LockOptions, StepsOption } from "../types.js";
import type { ResultCodec } from "./result.js";
import { runVerb, type VerbBody } from "./run-verb.js";

/**
 * Options of {@link once}: those of {@link LockOptions}, plus how the result is recorded.
 *
 * @example
 * ```ts
 * import { InMemoryLock, type OnceOptions } from "gcp-pubsub-idempotency";
 *
 * const options: OnceOptions<{ orderId: string }> = {
 *   backend: new InMemoryLock(),
 *   waitMs: 2_000, // a concurrent call waits for the first one's result
 *   fingerprint: "po=4711;total=99",
 * };
 * ```
 */
export interface OnceOptions<T> extends LockOptions, FingerprintOption, StepsOption {
  /** How the result becomes text and back; default JSON. */
  codec?: ResultCodec<T> | undefined;
  /**
   * The largest result kept, in UTF-8 bytes of its encoded text; default
   * {@link DEFAULT_MAX_RESULT_BYTES} (64 KiB), and never more than the backend keeps. A larger
   * one is not recorded: the key still completes, an ERROR line says why, and later calls
   * reject {@link Duplicate}.
   */
  maxResultBytes?: number | undefined;
}

const GUARDED: VerbBody<GuardedBody<unknown>, unknown> = { signalAt: 1, adapt: (body) => body };

/**
 * Run `body` at most once per `key` within the backend's ttl, and resolve every call, the
 * first and each later one, to that run's result. The result is stored with the DONE record
 * in the same store call as the complete (no extra round trip).
 *
 * - A later call resolves to the recorded result (decoded by `options.codec`).
 * - A call that meets a live holder waits up to `waitMs` for its result; without a wait it
 *   rejects {@link InProgress}.
 * - A body that throws records nothing: the claim is released and the error propagates.
 * - A key completed without a result (by {@link lock}, or a result that could not be recorded)
 *   rejects {@link Duplicate}, its message saying why there is no result.
 * - A `fingerprint` that differs from the stored one rejects {@link PayloadMismatch}.
 *
 * Needs a backend that stores results (every built-in backend does); others are refused with
 * {@link InvalidConfiguration} before any I/O.
 *
 * @example
 * ```ts
 * import { InMemoryLock, once } from "gcp-pubsub-idempotency";
 *
 * declare function createOrder(po: string): Promise<{ orderId: string }>;
 * const backend = new InMemoryLock();
 * const first = await once("orders:4711", { backend }, () => createOrder("4711"));
 * const again = await once("orders:4711", { backend }, () => createOrder("4711"));
 * console.log(first.orderId === again.orderId); // true: the body ran once
 * ```
 */
export function once<T>(key: string, options: OnceOptions<T>, body: GuardedBody<T>): Promise<T> {
  return runVerb("once", "once()", key, options, body, GUARDED as VerbBody<GuardedBody<T>, T>);
}
