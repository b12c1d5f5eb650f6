/**
 * The record state machine (docs/state-machine.md) as pure functions, written once: given the
 * stored record (or none), the time and the call, each returns the row of the table that
 * applies, the call's answer and the write. InMemoryLock, DatastoreLock, FirestoreLock and
 * SpannerLock keep only their I/O around these; RedisLock's Lua scripts and SqlLock's statements encode
 * the same rows in their own language and name them, with these row names, in their headers.
 */
import type { Claim, ClaimOutcome, ForceReleaseOutcome, InspectedRecord } from "./port.js";

/** One record per key, as every store keeps it; times are epoch ms in the backend's clock. */
export interface LockRecord {
  readonly state: "claimed" | "done";
  /**
   * Rises on every (re)claim and release while the record exists; a record created where none
   * was starts above every fence the key had before (see {@link claimTransition}).
   */
  readonly fencingId: number;
  readonly leaseExpiresAt: number;
  /** The earliest moment the record may be physically deleted. */
  readonly expiresAt: number;
  /** The token of the claim that last won the record, where the store keeps one. */
  readonly token?: string | undefined;
  /** The fingerprint the winning claim gave; every win replaces it (undefined: none given). */
  readonly fingerprint?: string | undefined;
  /** The encoded result complete stored (done only); every win clears it. */
  readonly result?: string | undefined;
}

/** The rows of the transition table, `<call>.<case>`; docs/state-machine.md lists them all. */
export type TransitionRow =
  | "claim.absent"
  | "claim.own"
  | "claim.held"
  | "claim.lapsed"
  | "claim.done"
  | "claim.expired"
  | "complete.claimed"
  | "complete.retried"
  | "complete.fenced"
  | "release.claimed"
  | "release.fenced"
  | "renew.claimed"
  | "renew.fenced"
  | "purge.expired"
  | "purge.kept"
  | "inspect.found"
  | "inspect.absent"
  | "forceRelease.claimed"
  | "forceRelease.changed"
  | "forceRelease.done"
  | "forceRelease.absent";

/** What one call does to one record: the row that applied, the answer, and what to store. */
export interface Transition<A, W = LockRecord> {
  readonly row: TransitionRow;
  readonly answer: A;
  /** The new record (or `"delete"`); absent when nothing is written. */
  readonly write?: W;
}

/** One call's transition, given the record as read (or none) and the time. */
export type Decide<A> = (record: LockRecord | undefined, now: number) => Transition<A>;

/** A claim of `key` for `leaseMs`; the record then lives `ttlMs` past its lease. */
export interface ClaimCall {
  readonly key: string;
  readonly leaseMs: number;
  readonly ttlMs: number;
  /**
   * A random token per call, kept by its retries, for stores where a claim is retried after
   * a write whose response was lost: finding it in the record means that write landed.
   */
  readonly token?: string | undefined;
  /** Stored with the record this claim wins; answered back with `done` and `held`. */
  readonly fingerprint?: string | undefined;
}

/** A complete, release or renew of a won claim; `leaseMs` only for renew. */
export interface FencedCall {
  readonly claim: Pick<Claim, "key" | "fencingId">;
  readonly ttlMs: number;
}

/** A complete: `result` is the encoded value to keep with the DONE record (once, step). */
export interface CompleteCall extends FencedCall {
  readonly result?: string | undefined;
}

/**
 * Claim: take an absent or reclaimable record, or report the live one. `firstFence` is the
 * fence of a record created where none is stored: above any fence the key had before it was
 * deleted, so an old holder's claim can never match the new record. Stores seed it from their
 * own clock ({@link clockFence}) or from a sequence (InMemoryLock).
 */
export function claimTransition(
  record: LockRecord | undefined,
  now: number,
  call: ClaimCall,
  firstFence: number,
): Transition<ClaimOutcome> {
  if (record === undefined) return win("claim.absent", firstFence, now, call);
  if (call.token !== undefined && record.token === call.token && record.state === "claimed") {
    // A retry of this very call whose first write landed: its win stands, unchanged.
    return { row: "claim.own", answer: wonOutcome(call.key, record) };
  }
  if (record.state === "done") {
    if (now < record.expiresAt) {
      if (record.fingerprint === undefined && record.result === undefined) return CLAIM_DONE;
      return { row: "claim.done", answer: doneOutcome(record) };
    }
    return win("claim.expired", record.fencingId + 1, now, call);
  }
  if (now < record.leaseExpiresAt) {
    const { leaseExpiresAt, fingerprint } = record;
    return {
      row: "claim.held",
      answer:
        fingerprint === undefined
          ? { status: "held", leaseExpiresAt }
          : { status: "held", leaseExpiresAt, fingerprint },
    };
  }
  // The fence rises because the record still exists (it may be past expiresAt, not yet deleted).
  return win("claim.lapsed", record.fencingId + 1, now, call);
}

/**
 * Complete: claimed → done when the fence matches; no lease guard. The result, when given,
 * lands in the same write as DONE.
 */
export function completeTransition(
  record: LockRecord | undefined,
  now: number,
  call: CompleteCall,
): Transition<boolean> {
  if (!holdsFence(record, call, now)) return { row: "complete.fenced", answer: false };
  // A retried complete (its first write landed) finds it done and still says true.
  if (record.state === "done") return { row: "complete.retried", answer: true };
  return {
    row: "complete.claimed",
    answer: true,
    write: { ...record, state: "done", expiresAt: now + call.ttlMs, result: call.result },
  };
}

/** Release: the lease ends now and the fence rises, so the claim can never complete later. */
export function releaseTransition(
  record: LockRecord | undefined,
  now: number,
  call: FencedCall,
): Transition<undefined> {
  if (!holdsFence(record, call, now) || record.state !== "claimed") {
    return { row: "release.fenced", answer: undefined };
  }
  return {
    row: "release.claimed",
    answer: undefined,
    write: {
      ...record,
      fencingId: record.fencingId + 1,
      leaseExpiresAt: now,
      expiresAt: now + call.ttlMs,
    },
  };
}

/** Renew: a live claim's lease runs until now + `leaseMs`. */
export function renewTransition(
  record: LockRecord | undefined,
  now: number,
  call: FencedCall & { readonly leaseMs: number },
): Transition<boolean> {
  if (!holdsFence(record, call, now) || record.state !== "claimed") {
    return { row: "renew.fenced", answer: false };
  }
  const leaseExpiresAt = now + call.leaseMs;
  return {
    row: "renew.claimed",
    answer: true,
    write: { ...record, leaseExpiresAt, expiresAt: leaseExpiresAt + call.ttlMs },
  };
}

/** Purge: a record past its `expiresAt` may be deleted; the answer says whether it was. */
export function purgeTransition(
  record: LockRecord | undefined,
  now: number,
): Transition<boolean, "delete"> {
  return record === undefined || now < record.expiresAt ? PURGE_KEPT : PURGE_EXPIRED;
}

// The transitions that carry nothing of the call: built once, frozen, shared. InMemoryLock's
// sweep runs purgeTransition on every claim, and a duplicate meets CLAIM_DONE.
const PURGE_KEPT: Transition<boolean, "delete"> = Object.freeze({
  row: "purge.kept",
  answer: false,
});
const PURGE_EXPIRED: Transition<boolean, "delete"> = Object.freeze({
  row: "purge.expired",
  answer: true,
  write: "delete",
});
const CLAIM_DONE: Transition<ClaimOutcome> = Object.freeze({
  row: "claim.done",
  answer: Object.freeze({ status: "done" }),
});

// --- Operator calls (the CLI's inspect and release) ----------------------------------------

/** Inspect: the record as stored (even past its expiry, if not deleted yet) and the time. */
export function inspectTransition(
  record: LockRecord | undefined,
  now: number,
  key: string,
): Transition<InspectedRecord | undefined> {
  if (record === undefined) return { row: "inspect.absent", answer: undefined };
  const { state, fencingId, leaseExpiresAt, expiresAt, fingerprint, result } = record;
  const answer: InspectedRecord = { key, state, fencingId, leaseExpiresAt, expiresAt, now };
  return {
    row: "inspect.found",
    answer:
      fingerprint === undefined && result === undefined
        ? answer
        : { ...answer, ...definedFields(fingerprint, result) },
  };
}

/** A force-release of the claim of `key` an operator saw at `fencingId`. */
export interface ForceReleaseCall {
  readonly fencingId: number;
  readonly ttlMs: number;
}

/**
 * Force-release: what `release` does for its holder, done by an operator for a stuck claim (a
 * holder that hangs, or a lease far longer than the crash it outlived). Guarded by the fence the
 * operator saw, so a claim that moved on since is left alone; a done record is never touched.
 */
export function forceReleaseTransition(
  record: LockRecord | undefined,
  now: number,
  call: ForceReleaseCall,
): Transition<ForceReleaseOutcome> {
  if (record === undefined || now >= record.expiresAt) {
    return { row: "forceRelease.absent", answer: { status: "absent" } };
  }
  if (record.state === "done") return { row: "forceRelease.done", answer: { status: "done" } };
  if (record.fencingId !== call.fencingId) {
    return {
      row: "forceRelease.changed",
      answer: { status: "changed", fencingId: record.fencingId },
    };
  }
  const fencingId = record.fencingId + 1;
  return {
    row: "forceRelease.claimed",
    answer: { status: "released", fencingId },
    write: { ...record, fencingId, leaseExpiresAt: now, expiresAt: now + call.ttlMs },
  };
}

/**
 * The first fence of a record created at `nowMs` (epoch ms) by a store whose clock reads whole
 * ms: that time in µs. A later record of the key starts above every fence an earlier one
 * reached as long as a record sees fewer than 1000 fence steps (claims and releases) per ms of
 * its life, and the clock never steps back by more than the ttl. Below 2^53 until the year
 * 2255, so exact in a double. Redis, PostgreSQL and MySQL seed from their µs clocks instead.
 */
export function clockFence(nowMs: number): number {
  return Math.floor(nowMs) * 1000;
}

/**
 * For the Google backends, judged in the store's time once the win's write landed: a claim
 * whose write waited out its whole lease (retries behind the store's lock timeouts take
 * seconds) has lapsed by the time it returns, and another claimer may have reclaimed it
 * already. Such a win is not handed to a body: it answers `held` instead, and the record,
 * still claimed with a lapsed lease, is reclaimed at fence + 1 by the redelivery.
 */
export function unlessLapsed(outcome: ClaimOutcome, now: number): ClaimOutcome {
  if (outcome.status !== "won" || now < outcome.claim.leaseExpiresAt) return outcome;
  return { status: "held", leaseExpiresAt: outcome.claim.leaseExpiresAt };
}

/**
 * True when `record` is the live record of the call's claim: same fence, not yet past
 * `expiresAt` (an expired record answers as if absent, deleted or not).
 */
function holdsFence(
  record: LockRecord | undefined,
  call: FencedCall,
  now: number,
): record is LockRecord {
  return (
    record !== undefined && record.fencingId === call.claim.fencingId && now < record.expiresAt
  );
}

function win(
  row: TransitionRow,
  fencingId: number,
  now: number,
  call: ClaimCall,
): Transition<ClaimOutcome> {
  const leaseExpiresAt = now + call.leaseMs;
  // A claimed record outlives any holder that could still be alive: expiresAt = lease + ttl.
  const write: LockRecord = {
    state: "claimed",
    fencingId,
    leaseExpiresAt,
    expiresAt: leaseExpiresAt + call.ttlMs,
    token: call.token,
    fingerprint: call.fingerprint,
  };
  return { row, answer: wonOutcome(call.key, write), write };
}

/** The done answer with what the record keeps beyond its state; absent fields left out. */
function doneOutcome(record: LockRecord): ClaimOutcome {
  return { status: "done", ...definedFields(record.fingerprint, record.result) };
}

function definedFields(
  fingerprint: string | undefined,
  result: string | undefined,
): { fingerprint?: string; result?: string } {
  const fields: { fingerprint?: string; result?: string } = {};
  if (fingerprint !== undefined) fields.fingerprint = fingerprint;
  if (result !== undefined) fields.result = result;
  return fields;
}

function wonOutcome(key: string, record: LockRecord): ClaimOutcome {
  return {
    status: "won",
    claim: { key, fencingId: record.fencingId, leaseExpiresAt: record.leaseExpiresAt },
  };
}
