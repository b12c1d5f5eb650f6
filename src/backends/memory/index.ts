import { DEFAULT_TTL_MS } from "../../core/constants.js";
import { InvalidConfiguration } from "../../core/errors.js";
import type {
  BackendSupport,
  Claim,
  ClaimOptions,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  LockBackend,
  PurgeOptions,
} from "../../core/port.js";
import { claimFingerprint, completeResult } from "../../core/record-fields.js";
import {
  claimTransition,
  completeTransition,
  forceReleaseTransition,
  inspectTransition,
  type LockRecord,
  purgeTransition,
  releaseTransition,
  renewTransition,
  type Transition,
} from "../../core/transitions.js";
import { offerTrustedPort } from "../../core/trusted-port.js";
import {
  assertFencingId,
  assertPositiveMs,
  assertValidKey,
  describe,
  functionOption,
  knownOptions,
  readOptions,
  ttlOption,
} from "../../core/validate.js";

/**
 * Options of {@link InMemoryLock}.
 *
 * @example
 * ```ts
 * import { InMemoryLock, type InMemoryLockOptions } from "gcp-pubsub-idempotency";
 * import { createFakeClock } from "gcp-pubsub-idempotency/testing";
 *
 * const clock = createFakeClock();
 * const options: InMemoryLockOptions = { ttlMs: 60_000, now: clock.now };
 * const backend = new InMemoryLock(options);
 * ```
 */
export interface InMemoryLockOptions {
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to {@link MAX_TTL_MS}; default
   * {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number | undefined;
  /**
   * The clock, epoch ms; inject one to move time in tests. Default `Date.now`. It must be a
   * function (checked by the constructor) returning a finite number (checked on each call).
   */
  now?: (() => number) | undefined;
}

/** The largest result InMemoryLock keeps: a guard against one record holding the heap. */
const MAX_RESULT_BYTES = 16 * 1024 * 1024;

/** How many records each claim inspects for expiry, so memory stays bounded without a timer. */
const SWEEP_STEP = 2;

/** The options InMemoryLock takes; any other name is refused. */
const NAMES = ["ttlMs", "now"] as const;
const KNOWN = knownOptions(NAMES, "backend");

/**
 * The reference backend: the transition table of docs/state-machine.md over one process's
 * memory. For tests and single-process use; it is not shared between instances.
 *
 * Memory: every claim also inspects a couple of records and deletes those past their
 * `expiresAt`, so the map holds roughly the records that are still live. Call
 * `purgeExpired()` to sweep everything at once.
 *
 * @example
 * ```ts
 * import { Duplicate, InMemoryLock, lock } from "gcp-pubsub-idempotency";
 *
 * const backend = new InMemoryLock({ ttlMs: 10 * 60_000 });
 * await lock("orders:42", { backend }, async () => console.log("runs once"));
 * await lock("orders:42", { backend }, async () => console.log("never"))
 *   .catch((error) => console.log(error instanceof Duplicate)); // true
 * ```
 */
export class InMemoryLock implements LockBackend {
  /** How long a DONE key suppresses duplicates, in ms. */
  readonly ttlMs: number;
  /** Results up to 16 MiB and fingerprints, kept in the record. */
  readonly supports: BackendSupport = {
    results: true,
    fingerprints: true,
    maxResultBytes: MAX_RESULT_BYTES,
  };
  private readonly clock: () => number;
  private readonly records = new Map<string, LockRecord>();
  /**
   * The highest fence of any record deleted so far: a record created later starts above it,
   * so no claim on a deleted record matches its key's next one. A sequence needs no clock.
   */
  private deletedFence = 0;
  private sweepCursor: IterableIterator<[string, LockRecord]> | undefined;

  /**
   * Checks every option before anything else: a `ttlMs` that is not a whole number of ms
   * from 1 to {@link MAX_TTL_MS}, or a `now` that is not a function, throws
   * {@link InvalidConfiguration}.
   */
  constructor(options: InMemoryLockOptions = {}) {
    const read = readOptions("InMemoryLock", options, true, NAMES, KNOWN);
    this.ttlMs = ttlOption(read.ttlMs, DEFAULT_TTL_MS);
    this.clock = functionOption<() => number>("now", read.now) ?? Date.now;
    if (new.target === InMemoryLock) {
      offerTrustedPort(this, {
        claim: async (key, leaseMs, options) => this.claimNow(key, leaseMs, options?.fingerprint),
        complete: async (claim, result) => this.completeNow(claim, result),
        release: async (claim) => this.releaseNow(claim),
        renew: async (claim, leaseMs) => this.renewNow(claim, leaseMs),
      });
    }
  }

  /** How many records are stored, live or awaiting deletion. */
  get size(): number {
    return this.records.size;
  }

  /** The injected clock's time; a clock that answers no number would make every lease lapse. */
  private now(): number {
    const now: unknown = this.clock();
    if (typeof now !== "number" || !Number.isFinite(now)) {
      throw new InvalidConfiguration(
        `InMemoryLock now() must return epoch ms as a finite number, got ${describe(now)}`,
      );
    }
    return now;
  }

  async claim(key: string, leaseMs: number, options?: ClaimOptions): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    return this.claimNow(key, leaseMs, claimFingerprint(options));
  }

  async complete(claim: Claim, result?: string): Promise<boolean> {
    assertValidKey(claim.key);
    return this.completeNow(claim, completeResult(result, MAX_RESULT_BYTES));
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    this.releaseNow(claim);
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    return this.renewNow(claim, leaseMs);
  }

  async purgeExpired(options?: PurgeOptions): Promise<number> {
    const now = this.now();
    let removed = 0;
    for (const [key, record] of this.records) {
      if (purgeTransition(record, now).write === "delete") {
        this.delete(key, record);
        removed += 1;
      }
    }
    options?.onProgress?.(removed);
    return removed;
  }

  // Operator calls (the CLI's inspect and release).

  async inspect(key: string): Promise<InspectedRecord | undefined> {
    assertValidKey(key);
    return this.keep(key, inspectTransition(this.records.get(key), this.now(), key));
  }

  async forceRelease(key: string, fencingId: number): Promise<ForceReleaseOutcome> {
    assertValidKey(key);
    assertFencingId(fencingId);
    const record = this.records.get(key);
    const call = { fencingId, ttlMs: this.ttlMs };
    return this.keep(key, forceReleaseTransition(record, this.now(), call));
  }

  /** Forget every record (the fences they reached are kept: a claim after close starts above). */
  async close(): Promise<void> {
    for (const [key, record] of this.records) this.delete(key, record);
  }

  // The port methods once their arguments are checked, synchronous: the public methods and
  // the trusted port each add the one async frame a call has (npm run bench -- --only
  // gateway --against: a second one made a bare claim 22-29 % slower).

  private claimNow(key: string, leaseMs: number, fingerprint?: string): ClaimOutcome {
    const now = this.now();
    this.sweep(now);
    const call = { key, leaseMs, ttlMs: this.ttlMs, fingerprint };
    return this.keep(key, claimTransition(this.records.get(key), now, call, this.deletedFence + 1));
  }

  private completeNow(claim: Claim, result?: string): boolean {
    const record = this.records.get(claim.key);
    const call = { claim, ttlMs: this.ttlMs, result };
    return this.keep(claim.key, completeTransition(record, this.now(), call));
  }

  private releaseNow(claim: Claim): void {
    const record = this.records.get(claim.key);
    this.keep(claim.key, releaseTransition(record, this.now(), { claim, ttlMs: this.ttlMs }));
  }

  private renewNow(claim: Claim, leaseMs: number): boolean {
    const record = this.records.get(claim.key);
    const call = { claim, leaseMs, ttlMs: this.ttlMs };
    return this.keep(claim.key, renewTransition(record, this.now(), call));
  }

  private delete(key: string, record: LockRecord): void {
    this.records.delete(key);
    if (record.fencingId > this.deletedFence) this.deletedFence = record.fencingId;
  }

  /**
   * Store what a transition writes and give its answer. Map.set on a present key keeps its
   * place, so the sweep still meets every record once per pass.
   */
  private keep<A>(key: string, { answer, write }: Transition<A>): A {
    if (write !== undefined) this.records.set(key, write);
    return answer;
  }

  private sweep(now: number): void {
    for (let i = 0; i < SWEEP_STEP; i++) {
      this.sweepCursor ??= this.records.entries();
      const next = this.sweepCursor.next();
      if (next.done) {
        this.sweepCursor = undefined;
        return;
      }
      const [key, record] = next.value;
      if (purgeTransition(record, now).write === "delete") this.delete(key, record);
    }
  }
}
