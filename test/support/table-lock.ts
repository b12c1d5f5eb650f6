// The transition table over a Map on an injected clock, as InMemoryLock keeps it: a store the
// model tests bend in one place (a broken row, a win answered late) to see the model judge it.
import type { Claim, ClaimOutcome, LockBackend } from "../../src/core/port.js";
import {
  claimTransition,
  clockFence,
  completeTransition,
  type Decide,
  type LockRecord,
  releaseTransition,
  renewTransition,
} from "../../src/core/transitions.js";
import type { FakeClock } from "../../src/testing/index.js";

/** Each verb's decision, as the table gives it; a test replaces one to break that row. */
export interface TableDecisions {
  claim(key: string, leaseMs: number): Decide<ClaimOutcome>;
  complete(claim: Claim): Decide<boolean>;
  release(claim: Claim): Decide<undefined>;
  renew(claim: Claim, leaseMs: number): Decide<boolean>;
}

/** The table's own decisions for records that live ttlMs past their end. */
export function tableDecisions(ttlMs: number): TableDecisions {
  return {
    claim: (key, leaseMs) => (record, now) =>
      claimTransition(record, now, { key, leaseMs, ttlMs }, clockFence(now)),
    complete: (claim) => (record, now) => completeTransition(record, now, { claim, ttlMs }),
    release: (claim) => (record, now) => releaseTransition(record, now, { claim, ttlMs }),
    renew: (claim, leaseMs) => (record, now) =>
      renewTransition(record, now, { claim, leaseMs, ttlMs }),
  };
}

export class TableLock implements LockBackend {
  protected readonly records = new Map<string, LockRecord>();

  constructor(
    protected readonly clock: FakeClock,
    protected readonly decisions: TableDecisions,
  ) {}

  /** Decide on the key's record at the clock's now, and write what the decision writes. */
  protected apply<A>(key: string, decide: Decide<A>): A {
    const { answer, write } = decide(this.records.get(key), this.clock.now());
    if (write !== undefined) this.records.set(key, write);
    return answer;
  }

  async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    return this.apply(key, this.decisions.claim(key, leaseMs));
  }
  async complete(claim: Claim): Promise<boolean> {
    return this.apply(claim.key, this.decisions.complete(claim));
  }
  async release(claim: Claim): Promise<void> {
    this.apply(claim.key, this.decisions.release(claim));
  }
  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    return this.apply(claim.key, this.decisions.renew(claim, leaseMs));
  }
}
