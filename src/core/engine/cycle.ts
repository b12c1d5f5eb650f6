// The claim cycle, the one engine under every verb and surface: claim (waiting for a held key
// while `waitMs` allows), run the body under the claim (its signal, its heartbeat), then
// complete (lock), release (mutex) or commit with the body's writes (transaction); a body that
// throws releases. The two failures after a body that succeeded are caught here, logged, never
// raised: re-raising would redeliver the message and repeat the work. Everything ends in one
// CycleOutcome; nothing here knows of telemetry (telemetry/trace.ts wraps it).
import { deliveryFields, errorText, type MessageRef } from "../logger.js";
import type { ResolvedLockOptions } from "../options.js";
import type {
  Claim,
  ClaimOutcome,
  TransactionalLockBackend,
  TransactionCompletion,
} from "../port.js";
import { type Backoff, backoffDelay, sleep } from "../retry.js";
import { watchLease } from "./lease.js";
import type { CycleOutcome, Held } from "./outcome.js";

/**
 * How the cycle settles a body that ran: `lock` completes the key (DONE), `once` completes it
 * with the body's result recorded, `mutex` releases it (every message runs, one at a time),
 * `transaction` completes it inside the store transaction the body wrote in.
 */
export type CycleMode = "lock" | "once" | "mutex" | "transaction";

/**
 * A once() body's value as the record keeps it: `text` goes to complete; `unrecorded` says
 * why it holds no value (too large, not encodable), for the ERROR line.
 */
export interface RecordedResult {
  readonly text: string;
  readonly unrecorded?: string | undefined;
}

/** The guarded work: the claim, its signal, and in transaction mode the store's transaction. */
export type CycleBody<T> = (claim: Claim, signal: AbortSignal, tx: unknown) => T | Promise<T>;

/** One cycle to run: every field checked already, where it entered. */
export interface Cycle<T> {
  readonly mode: CycleMode;
  /** A valid key (assertValidKey): the port is not asked to check it again. */
  readonly key: string;
  readonly options: ResolvedLockOptions;
  readonly body: CycleBody<T>;
  /** The body declares its signal parameter: it gets a signal of its own. */
  readonly bodyTakesSignal: boolean;
  /** The message a surface runs this cycle for: every line the cycle writes names it. */
  readonly message: MessageRef | undefined;
  /** Aborts the body's signal too (a push client that went away). */
  readonly signal: AbortSignal | undefined;
  /** Stored with the claim; a record holding another one ends the cycle `payload_mismatch`. */
  readonly fingerprint?: string | undefined;
  /** Once mode: the body's value as the DONE record keeps it. */
  readonly record?: ((value: T) => RecordedResult) | undefined;
}

/** Run one claim cycle. Never rejects: every ending is an outcome. */
export async function runCycle<T>(cycle: Cycle<T>): Promise<CycleOutcome<T>> {
  const { key, options } = cycle;
  const { fingerprint } = cycle;
  let claimed: ClaimOutcome;
  // When the winning claim left: a heartbeat vouches for the lease from then, not from its answer.
  const sent = { at: Date.now() };
  try {
    claimed = await claimWithin(options, key, fingerprint, cycle.signal, sent);
  } catch (error) {
    return { kind: "failed", key, error, inBody: false };
  }
  if (claimed.status !== "won" && mismatched(claimed, fingerprint)) {
    return { kind: "payload_mismatch", key };
  }
  if (claimed.status === "done") {
    // A mutex never completes, so a DONE record belongs to a lock() on the same key.
    if (cycle.mode === "mutex") return completedByLock(key);
    const { result } = claimed;
    return result === undefined ? { kind: "duplicate", key } : { kind: "duplicate", key, result };
  }
  if (claimed.status === "held") {
    return { kind: "held", key, leaseExpiresAt: claimed.leaseExpiresAt, completedByLock: false };
  }
  const { claim } = claimed;
  if (cycle.mode === "transaction") return runInTransaction(cycle, claim, sent.at);
  const lease = watchLease(options, claim, cycle, sent.at);
  let value: T;
  try {
    value = await cycle.body(claim, lease.signal, undefined);
  } catch (error) {
    lease.end();
    await releaseAfterFailure(cycle, claim, error);
    return { kind: "failed", key, error, inBody: true };
  }
  lease.end();
  return cycle.mode === "mutex"
    ? releaseAfterMutex(cycle, claim, value)
    : completeAfterSuccess(cycle, claim, value);
}

/**
 * The record holds a fingerprint, this call gives one, and they differ. No fingerprint on
 * either side means no comparison: a record written by a call without one matches any.
 */
function mismatched(
  outcome: { readonly fingerprint?: string | undefined },
  fingerprint: string | undefined,
): boolean {
  return (
    fingerprint !== undefined &&
    outcome.fingerprint !== undefined &&
    outcome.fingerprint !== fingerprint
  );
}

function completedByLock(key: string): Held {
  return { kind: "held", key, leaseExpiresAt: undefined, completedByLock: true };
}

/** Re-claims of a held key while `waitMs` allows: pauses averaging 10 ms, doubling to 500 ms. */
const HELD_BACKOFF: Backoff = { baseDelayMs: 20, maxDelayMs: 1_000 };

/**
 * The claim, retried while the key is held and `waitMs` allows, and until `gone` aborts (a
 * push client that left hears no answer). Without a wait it is the port's own promise: no
 * async frame of its own (npm run bench -- --only gateway --against: one more made lock()
 * over an instant backend 10-20 % slower).
 */
function claimWithin(
  options: ResolvedLockOptions,
  key: string,
  fingerprint: string | undefined,
  gone: AbortSignal | undefined,
  sent: { at: number },
): Promise<ClaimOutcome> {
  if (options.waitMs === 0) return claimOnce(options, key, fingerprint);
  return claimWaiting(options, key, fingerprint, gone, sent);
}

/** One claim; a backend is given the claim options only when there is something in them. */
function claimOnce(
  options: ResolvedLockOptions,
  key: string,
  fingerprint: string | undefined,
): Promise<ClaimOutcome> {
  return fingerprint === undefined
    ? options.port.claim(key, options.leaseMs)
    : options.port.claim(key, options.leaseMs, { fingerprint });
}

async function claimWaiting(
  options: ResolvedLockOptions,
  key: string,
  fingerprint: string | undefined,
  gone: AbortSignal | undefined,
  sent: { at: number },
): Promise<ClaimOutcome> {
  const { waitMs } = options;
  let outcome = await claimOnce(options, key, fingerprint);
  if (outcome.status !== "held") return outcome;
  const deadline = Date.now() + waitMs;
  // A holder with another payload is a mismatch now: waiting for it cannot change that.
  for (let n = 1; outcome.status === "held" && !mismatched(outcome, fingerprint); n++) {
    const left = deadline - Date.now();
    if (left <= 0 || gone?.aborted) break;
    await pause(Math.min(left, backoffDelay(HELD_BACKOFF, n)), gone);
    if (gone?.aborted) break;
    sent.at = Date.now();
    outcome = await claimOnce(options, key, fingerprint);
  }
  return outcome;
}

/** A pause between claims that ends early when `gone` aborts. */
function pause(ms: number, gone: AbortSignal | undefined): Promise<void> {
  if (gone === undefined) return sleep(ms);
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      gone.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    gone.addEventListener("abort", done, { once: true });
  });
}

/**
 * The body runs in the store's transaction and DONE commits with its writes, while the fence
 * still matches: both land, or neither. A store may run the body more than once.
 */
async function runInTransaction<T>(
  cycle: Cycle<T>,
  claim: Claim,
  claimSentAt: number,
): Promise<CycleOutcome<T>> {
  const { key, options } = cycle;
  const port = options.port as TransactionalLockBackend<unknown>;
  const lease = watchLease(options, claim, cycle, claimSentAt);
  let inBody = false;
  let completion: TransactionCompletion<T>;
  try {
    completion = await port.completeInTransaction(claim, async (tx) => {
      inBody = false;
      try {
        return await cycle.body(claim, lease.signal, tx);
      } catch (error) {
        inBody = true;
        throw error;
      } finally {
        // Before the fenced complete: a renewal queued behind the transaction (one SQLite
        // connection) must find the heartbeat stopped, not report the finished key as lost.
        lease.end();
      }
    });
  } catch (error) {
    lease.end();
    // Nothing landed, neither the body's writes nor DONE: free the key for the redelivery.
    await releaseAfterFailure(cycle, claim, error);
    return { kind: "failed", key, error, inBody };
  }
  const { value } = completion;
  if (completion.completed) return { kind: "ran", key, value };
  options.logger.error(
    "fenced out: the body outran its lease and another delivery reclaimed the key; its transaction was rolled back and the reclaimer's run is the one that counts — lengthen the lease or turn on heartbeat",
    deliveryFields("fenced_out", key, cycle.message, undefined, {
      fencingId: claim.fencingId,
      rolledBack: true,
      alert: true,
    }),
  );
  return { kind: "fenced_out", key, value };
}

/**
 * The body ran and the side effect happened: a complete that throws, or one fenced out, is
 * logged and answered as an outcome, never raised.
 */
async function completeAfterSuccess<T>(
  cycle: Cycle<T>,
  claim: Claim,
  value: T,
): Promise<CycleOutcome<T>> {
  const { key, options } = cycle;
  const result = cycle.record === undefined ? undefined : resultText(cycle, cycle.record, value);
  let completed: boolean;
  try {
    completed = await (result === undefined
      ? options.port.complete(claim)
      : options.port.complete(claim, result));
  } catch (error) {
    options.logger.error(
      "complete failed after the body succeeded; acking to avoid a repeat",
      deliveryFields("complete_failed", key, cycle.message, errorText(error), {
        fencingId: claim.fencingId,
      }),
    );
    return { kind: "complete_failed", key, value };
  }
  if (completed) return { kind: "ran", key, value };
  options.logger.error(
    "fenced out: the body outran its lease and another delivery reclaimed the key; the work may run twice — lengthen the lease or turn on heartbeat",
    deliveryFields("fenced_out", key, cycle.message, undefined, {
      fencingId: claim.fencingId,
      alert: true,
    }),
  );
  return { kind: "fenced_out", key, value };
}

/**
 * The text a once() body's value is recorded as. One that cannot be recorded still completes
 * the key (a second run would be worse than a lost result): the record says why, and so does
 * an ERROR line.
 */
function resultText<T>(cycle: Cycle<T>, record: (value: T) => RecordedResult, value: T): string {
  const { text, unrecorded } = record(value);
  if (unrecorded !== undefined) {
    cycle.options.logger.error(
      "once(): the body's result was not recorded; the key completes, and later calls reject Duplicate instead of replaying it",
      deliveryFields("result_not_recorded", cycle.key, cycle.message, unrecorded),
    );
  }
  return text;
}

/** A mutex body ran: free the key for the next message. A failed release is logged. */
async function releaseAfterMutex<T>(
  cycle: Cycle<T>,
  claim: Claim,
  value: T,
): Promise<CycleOutcome<T>> {
  try {
    await cycle.options.port.release(claim);
  } catch (error) {
    // The body ran; re-raising would redeliver and run it again. The lease frees the key.
    cycle.options.logger.error(
      "mutex release failed after the body ran; the key frees when its lease lapses",
      deliveryFields("release_failed", claim.key, cycle.message, errorText(error), {
        fencingId: claim.fencingId,
      }),
    );
  }
  return { kind: "ran", key: cycle.key, value };
}

/** The body threw: give the key back so a redelivery can run. The body's error wins. */
async function releaseAfterFailure<T>(
  cycle: Cycle<T>,
  claim: Claim,
  bodyError: unknown,
): Promise<void> {
  try {
    await cycle.options.port.release(claim);
  } catch (releaseError) {
    cycle.options.logger.error(
      "release failed after the body threw; the key frees when its lease lapses",
      deliveryFields("release_failed", claim.key, cycle.message, errorText(releaseError), {
        fencingId: claim.fencingId,
        bodyError: errorText(bodyError),
      }),
    );
    try {
      if (bodyError instanceof Error && bodyError.cause === undefined) {
        bodyError.cause = releaseError;
      }
    } catch {
      // A frozen error or a hostile Proxy keeps its own shape; the log line has both errors.
    }
  }
}
