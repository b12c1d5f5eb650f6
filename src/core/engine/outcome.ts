// The one answer of the engine: how a claim cycle ended. The word in `kind` is the word the log
// lines and the metrics use; the verbs turn an outcome into a value or a rejection, the
// surfaces into an HTTP status, an ack or a nack.
import { Duplicate, InProgress, inProgressText, PayloadMismatch } from "../errors.js";

/** The body ran and the cycle settled as its verb says: completed, released, or committed. */
export interface Ran<T> {
  readonly kind: "ran";
  readonly key: string;
  readonly value: T;
}

/**
 * The body ran, but the lease had lapsed and another delivery reclaimed the key: the complete
 * was refused (or the transaction rolled back). Logged with `alert: true`, never raised: a
 * retry would repeat the work.
 */
export interface FencedOut<T> {
  readonly kind: "fenced_out";
  readonly key: string;
  readonly value: T;
}

/** The body ran, but the complete threw. Logged, never raised, for the same reason. */
export interface CompleteFailed<T> {
  readonly kind: "complete_failed";
  readonly key: string;
  readonly value: T;
}

/** The key completed within its ttl: the body was skipped. */
export interface DuplicateKey {
  readonly kind: "duplicate";
  readonly key: string;
  /** The result once() recorded with the DONE record, encoded; absent when none was. */
  readonly result?: string | undefined;
}

/**
 * The key's record holds another fingerprint than the call's: another payload under the same
 * key. The body did not run.
 */
export interface PayloadMismatched {
  readonly kind: "payload_mismatch";
  readonly key: string;
}

/**
 * A live holder elsewhere owns the key (`leaseExpiresAt`, in the store's clock), or, for a
 * mutex, lock() completed it (`completedByLock`).
 */
export interface Held {
  readonly kind: "held";
  readonly key: string;
  readonly leaseExpiresAt: number | undefined;
  readonly completedByLock: boolean;
}

/**
 * The cycle failed: the claim (before any work), the body, or a transaction's commit. The
 * claim was released when one was won. `inBody`: the body's own error, as thrown.
 */
export interface Failed {
  readonly kind: "failed";
  readonly key: string | undefined;
  readonly error: unknown;
  readonly inBody: boolean;
}

/** How one claim cycle ended. */
export type CycleOutcome<T> =
  | Ran<T>
  | FencedOut<T>
  | CompleteFailed<T>
  | DuplicateKey
  | PayloadMismatched
  | Held
  | Failed;

/** What a mutex reports for a key that lock() completed. */
const COMPLETED_BY_LOCK_DETAIL = " (the key was completed by lock())";

/** The rejection of a held key, for a caller that throws. */
export function heldError(held: Held): InProgress {
  return held.completedByLock
    ? new InProgress(held.key, undefined, COMPLETED_BY_LOCK_DETAIL)
    : new InProgress(held.key, held.leaseExpiresAt);
}

/** The same as text (a 503 body), without building an error. */
export function heldText(held: Held): string {
  return held.completedByLock
    ? inProgressText(held.key, undefined, COMPLETED_BY_LOCK_DETAIL)
    : inProgressText(held.key, held.leaseExpiresAt);
}

/**
 * The verbs' answer: the body's value when it ran, else the rejection the verb documents
 * (Duplicate, InProgress, or the error as thrown).
 */
export function resultOf<T>(outcome: CycleOutcome<T>): T {
  switch (outcome.kind) {
    case "ran":
    case "fenced_out":
    case "complete_failed":
      return outcome.value;
    case "duplicate":
      throw new Duplicate(outcome.key);
    case "held":
      throw heldError(outcome);
    case "payload_mismatch":
      throw new PayloadMismatch(outcome.key);
    case "failed":
      throw outcome.error;
  }
}
