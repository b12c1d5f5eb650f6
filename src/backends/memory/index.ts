import { DEFAULT_TTL_MS } from "../../core/constants.js";
import { InvalidConfiguration } from "../../core/errors.js";
import type { Claim, ClaimOutcome, LockBackend } from "../../core/types.js";
import {
  assertPositiveMs,
  assertValidKey,
  describe,
  functionOption,
  ttlOption,
} from "../../core/validate.js";
import { readOptions } from "../shared/options.js";

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
  ttlMs?: number;
  /**
   * The clock, epoch ms; inject one to move time in tests. Default `Date.now`. It must be a
   * function (checked by the constructor) returning a finite number (checked on each call).
   */
  now?: () => number;
}

interface MemoryRecord {
  state: "claimed" | "done";
  fencingId: number;
  leaseExpiresAt: number;
  /** The earliest moment the record may be physically deleted. */
  expiresAt: number;
}

/** How many records each claim inspects for expiry, so memory stays bounded without a timer. */
const SWEEP_STEP = 2;

/**
 * The reference backend: the whole transition table in one process's memory. For tests
 * and single-process use; it is not shared between instances.
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
  private readonly clock: () => number;
  private readonly records = new Map<string, MemoryRecord>();
  private sweepCursor: IterableIterator<[string, MemoryRecord]> | undefined;

  /**
   * Checks every option before anything else: a `ttlMs` that is not a whole number of ms
   * from 1 to {@link MAX_TTL_MS}, or a `now` that is not a function, throws
   * {@link InvalidConfiguration}.
   */
  constructor(options: InMemoryLockOptions = {}) {
    const read = readOptions("InMemoryLock", options, true, ["ttlMs", "now"]);
    this.ttlMs = ttlOption(read.ttlMs, DEFAULT_TTL_MS);
    this.clock = functionOption<() => number>("now", read.now) ?? Date.now;
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

  async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    const now = this.now();
    this.sweep(now);
    const record = this.records.get(key);
    if (record === undefined) return this.win(key, 1, now, leaseMs);
    if (record.state === "done") {
      if (now < record.expiresAt) return { status: "done" };
    } else if (now < record.leaseExpiresAt) {
      return { status: "held", leaseExpiresAt: record.leaseExpiresAt };
    }
    // A lapsed lease or ttl: reclaim, and the fence rises because the record still exists.
    return this.win(key, record.fencingId + 1, now, leaseMs);
  }

  async complete(claim: Claim): Promise<boolean> {
    assertValidKey(claim.key);
    const record = this.current(claim);
    if (record === undefined) return false;
    if (record.state === "claimed") {
      record.state = "done";
      record.expiresAt = this.now() + this.ttlMs;
    }
    return true;
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    const record = this.current(claim);
    if (record === undefined || record.state !== "claimed") return;
    const now = this.now();
    record.fencingId += 1;
    record.leaseExpiresAt = now;
    record.expiresAt = now + this.ttlMs;
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    const record = this.current(claim);
    if (record === undefined || record.state !== "claimed") return false;
    const now = this.now();
    record.leaseExpiresAt = now + leaseMs;
    record.expiresAt = record.leaseExpiresAt + this.ttlMs;
    return true;
  }

  async purgeExpired(): Promise<number> {
    const now = this.now();
    let removed = 0;
    for (const [key, record] of this.records) {
      if (now >= record.expiresAt) {
        this.records.delete(key);
        removed += 1;
      }
    }
    return removed;
  }

  /** Forget every record. */
  async close(): Promise<void> {
    this.records.clear();
  }

  private win(key: string, fencingId: number, now: number, leaseMs: number): ClaimOutcome {
    const leaseExpiresAt = now + leaseMs;
    // Re-insert so the sweep cursor, which walks insertion order, meets it again later.
    this.records.delete(key);
    this.records.set(key, {
      state: "claimed",
      fencingId,
      leaseExpiresAt,
      expiresAt: leaseExpiresAt + this.ttlMs,
    });
    return { status: "won", claim: { key, fencingId, leaseExpiresAt } };
  }

  /** The record, if the claim's fence is still the record's. */
  private current(claim: Claim): MemoryRecord | undefined {
    const record = this.records.get(claim.key);
    if (record === undefined || record.fencingId !== claim.fencingId) return undefined;
    if (this.now() >= record.expiresAt) return undefined;
    return record;
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
      if (now >= record.expiresAt) this.records.delete(key);
    }
  }
}
