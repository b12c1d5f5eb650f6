import { Duplicate, InProgress } from "./errors.js";
import { startHeartbeat } from "./heartbeat.js";
import { deliveryFields, errorText } from "./logger.js";
import { backendName, type ResolvedLockOptions, resolveLockOptions } from "./options.js";
import type { Claim, ClaimOutcome } from "./port.js";
import { type Backoff, backoffDelay, sleep } from "./retry.js";
import {
  loadTelemetryApi,
  Observation,
  type ObservedOutcome,
  observedBackend,
  telemetryApiSettled,
} from "./telemetry.js";
import type { GuardedBody, LockOptions } from "./types.js";
import { assertFunction, assertValidKey } from "./validate.js";

export type Verb = "lock" | "mutex";
/** The verbs as telemetry names them. */
export type ObservedVerb = Verb | "lockInTransaction";

/** How a refusal names the call, built once rather than on every call. */
const VERB_CALLS: Readonly<Record<Verb, string>> = { lock: "lock()", mutex: "mutex()" };
type Resolved = ResolvedLockOptions;

/**
 * A body that declares no `signal` parameter and runs without heartbeat can never see an
 * abort, so it shares one signal that is never aborted: an AbortController costs more than
 * the rest of a lock() cycle together.
 */
const UNUSED_SIGNAL_CONTROLLER = new AbortController();

/**
 * A claim that did not run the body: the key is done (a duplicate) or held. The verbs'
 * internal, exception-free answer, which the surfaces branch on; lock(), mutex() and
 * lockInTransaction() turn it into their documented rejections with {@link refusalError}.
 */
export class Refusal {
  constructor(
    readonly status: "done" | "held",
    /** When the holder's lease ends (held), epoch ms in the store's clock. */
    readonly leaseExpiresAt?: number,
    /** Held for a mutex because lock() completed the key. */
    readonly completedByLock = false,
  ) {}
}

const DUPLICATE = new Refusal("done");
const COMPLETED_BY_LOCK = new Refusal("held", undefined, true);
/** The detail of a mutex's InProgress on a key that lock() completed. */
export const COMPLETED_BY_LOCK_DETAIL = " (the key was completed by lock())";

/** The rejection a caller of the verbs sees for a refusal. */
export function refusalError(key: string, refusal: Refusal): Duplicate | InProgress {
  if (refusal.status === "done") return new Duplicate(key);
  return refusal.completedByLock
    ? new InProgress(key, undefined, COMPLETED_BY_LOCK_DETAIL)
    : new InProgress(key, refusal.leaseExpiresAt);
}

/**
 * The refusal a claim's outcome means for `verb` (undefined: the claim was won), with the
 * observation's outcome set to match.
 */
export function refusalOf(
  verb: ObservedVerb,
  outcome: ClaimOutcome,
  observation: Observation | undefined,
): Refusal | undefined {
  if (outcome.status === "won") return undefined;
  if (outcome.status === "done") {
    // A mutex never completes, so a DONE record belongs to a lock() on the same key.
    if (verb === "mutex") {
      if (observation) observation.outcome = "held";
      return COMPLETED_BY_LOCK;
    }
    if (observation) observation.outcome = "duplicate";
    return DUPLICATE;
  }
  if (observation) observation.outcome = "held";
  return new Refusal("held", outcome.leaseExpiresAt);
}

/** Re-claims of a held key while `waitMs` allows: pauses averaging 10 ms, doubling to 500 ms. */
const HELD_BACKOFF: Backoff = { baseDelayMs: 20, maxDelayMs: 1_000 };

/** Claim, and while `waitMs` allows, retry a held key with a short jittered backoff. */
export function claimWithin(r: Resolved, key: string): Promise<ClaimOutcome> {
  // Without waitMs the backend's own promise is the answer: no async frame around it.
  if (r.waitMs === 0) return r.backend.claim(key, r.leaseMs);
  return claimWaiting(r, key);
}

async function claimWaiting(r: Resolved, key: string): Promise<ClaimOutcome> {
  let outcome = await r.backend.claim(key, r.leaseMs);
  if (outcome.status !== "held") return outcome;
  const deadline = Date.now() + r.waitMs;
  for (let n = 1; outcome.status === "held"; n++) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(left, backoffDelay(HELD_BACKOFF, n)));
    outcome = await r.backend.claim(key, r.leaseMs);
  }
  return outcome;
}

/**
 * The verbs after validation: `r` was resolved once (per call by {@link lock}, once per
 * function by the surfaces) and `key` passed {@link assertValidKey}. A duplicate or a held
 * key resolves to a {@link Refusal}, not a rejection: expected outcomes cost no exception.
 */
export async function runResolved<T>(
  verb: Verb,
  key: string,
  r: ResolvedLockOptions,
  body: GuardedBody<T>,
  observation?: Observation,
): Promise<T | Refusal> {
  const claimedAt = observation ? performance.now() : 0;
  const outcome = await claimWithin(r, key);
  observation?.waited(performance.now() - claimedAt);
  if (outcome.status !== "won") return refusalOf(verb, outcome, observation) as Refusal;

  const { claim } = outcome;
  const { controller, stopHeartbeat } = watchClaim(r, claim, body.length >= 2);

  const bodyAt = observation ? performance.now() : 0;
  let result: T;
  try {
    result = await body(claim, controller.signal);
  } catch (error) {
    stopHeartbeat();
    if (observation) {
      observation.bodyRan(bodyAt);
      observation.outcome = "failed";
    }
    await releaseAfterFailure(r, claim, error);
    throw error;
  }
  stopHeartbeat();
  observation?.bodyRan(bodyAt);
  const ended =
    verb === "lock" ? await completeAfterSuccess(r, claim) : await releaseAfterMutex(r, claim);
  if (observation) observation.outcome = ended;
  return result;
}

/**
 * Observe one verb call with telemetry on: a span and metrics when an SDK is registered, or
 * undefined when nothing would record it. Synchronous once the API's import has settled;
 * only the calls made before that wait for it.
 */
export function observeVerb(
  r: ResolvedLockOptions,
  verb: ObservedVerb,
  key: string,
  under?: Observation,
): Observation | undefined | Promise<Observation | undefined> {
  const settings = r.telemetry;
  if (settings === undefined) return undefined;
  if (!telemetryApiSettled())
    return loadTelemetryApi().then(() => observeVerb(r, verb, key, under));
  if (Observation.idle(settings)) return undefined;
  return Observation.start(settings, verb, backendName(r.backend, "custom"), key, under);
}

/**
 * Run a verb under `observation`: its backend calls traced, its log lines carrying the trace,
 * its span active around the body, and its outcome counted when it ends.
 */
export async function runObserved<T>(
  observation: Observation,
  r: ResolvedLockOptions,
  run: (observed: ResolvedLockOptions) => Promise<T>,
): Promise<T> {
  const observed: ResolvedLockOptions = {
    ...r,
    backend: observedBackend(r.backend, observation),
    logger: observation.logger(r.logger),
  };
  let result: T;
  try {
    result = await observation.within(() => run(observed));
  } catch (error) {
    const { outcome } = observation;
    observation.end(outcome, outcome === "failed" ? error : undefined);
    throw error;
  }
  observation.end(observation.outcome);
  return result;
}

const NO_HEARTBEAT = (): void => {};

/**
 * The body's signal and, with `heartbeat` on, the renewals that abort it when the key is
 * taken over. `wantsSignal`: the body declares the signal parameter.
 */
export function watchClaim(
  r: Resolved,
  claim: Claim,
  wantsSignal: boolean,
): { controller: AbortController; stopHeartbeat: () => void } {
  const controller = r.heartbeat || wantsSignal ? new AbortController() : UNUSED_SIGNAL_CONTROLLER;
  const stopHeartbeat = r.heartbeat
    ? startHeartbeat(r.heartbeat, r.backend, claim, r.leaseMs, controller, r.logger, r.message)
    : NO_HEARTBEAT;
  return { controller, stopHeartbeat };
}

/** The body threw: give the key back so a redelivery can run. The body's error wins. */
export async function releaseAfterFailure(
  r: Resolved,
  claim: Claim,
  bodyError: unknown,
): Promise<void> {
  try {
    await r.backend.release(claim);
  } catch (releaseError) {
    r.logger.error(
      "release failed after the body threw; the key frees when its lease lapses",
      deliveryFields("release_failed", claim.key, r.message, errorText(releaseError), {
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

/**
 * The side effect already happened. Re-raising here would nack and repeat it, so both
 * failures are logged and swallowed: a thrown complete, and a complete fenced out.
 */
async function completeAfterSuccess(r: Resolved, claim: Claim): Promise<ObservedOutcome> {
  let completed: boolean;
  try {
    completed = await r.backend.complete(claim);
  } catch (error) {
    r.logger.error(
      "complete failed after the body succeeded; acking to avoid a repeat",
      deliveryFields("complete_failed", claim.key, r.message, errorText(error), {
        fencingId: claim.fencingId,
      }),
    );
    return "complete_failed";
  }
  if (!completed) {
    r.logger.error(
      "fenced out: the body outran its lease and another delivery reclaimed the key; the work may run twice — lengthen the lease or turn on heartbeat",
      deliveryFields("fenced_out", claim.key, r.message, undefined, {
        fencingId: claim.fencingId,
        alert: true,
      }),
    );
    return "fenced_out";
  }
  return "ran";
}

/** A mutex body ran: free the key for the next message. A failed release is logged. */
async function releaseAfterMutex(r: Resolved, claim: Claim): Promise<ObservedOutcome> {
  try {
    await r.backend.release(claim);
  } catch (error) {
    // The body ran; re-raising would redeliver and run it again. The lease frees the key.
    r.logger.error(
      "mutex release failed after the body ran; the key frees when its lease lapses",
      deliveryFields("release_failed", claim.key, r.message, errorText(error), {
        fencingId: claim.fencingId,
      }),
    );
  }
  return "ran";
}

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
export function lock<T>(key: string, options: LockOptions, body: GuardedBody<T>): Promise<T> {
  return runGuarded("lock", key, options, body);
}

async function runGuarded<T>(
  verb: Verb,
  key: string,
  options: LockOptions,
  body: GuardedBody<T>,
): Promise<T> {
  assertValidKey(key);
  const where = VERB_CALLS[verb];
  const r = resolveLockOptions(where, options);
  assertFunction(where, "body", body);
  let observation = observeVerb(r, verb, key);
  if (observation instanceof Promise) observation = await observation;
  const result =
    observation === undefined
      ? await runResolved(verb, key, r, body)
      : await runObserved(observation, r, (observed) =>
          runResolved(verb, key, observed, body, observation),
        );
  if (result instanceof Refusal) throw refusalError(key, result);
  return result;
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
export function mutex<T>(key: string, options: LockOptions, body: GuardedBody<T>): Promise<T> {
  return runGuarded("mutex", key, options, body);
}
