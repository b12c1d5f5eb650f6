// A store that answers a win `held` when its lease had lapsed by the answer (Datastore,
// Firestore, Spanner under load) leaves a record whose fence the client never saw. The next
// claim reclaims it at that unseen fence + 1: the model must take that as a fresh fence, not
// fail the store (CI's Spanner model run did, on 6 December). The store here follows the table
// exactly, on an injected clock, and makes every other win slow enough to lapse.
import { describe, expect, it } from "vitest";
import type { ClaimOutcome } from "../../src/core/port.js";
import { unlessLapsed } from "../../src/core/transitions.js";
import { createFakeClock, type FakeClock } from "../../src/testing/index.js";
import { checkAgainstTable } from "../support/model-run.js";
import { TableLock, tableDecisions } from "../support/table-lock.js";

const LEASE_MS = 40;
const TTL_MS = 40;

class LapsingLock extends TableLock {
  private wins = 0;
  /** Keys whose last win was answered `held`: their record's fence was never seen. */
  private readonly unseen = new Set<string>();
  /** Claims that won a record whose fence was never seen: the case under test. */
  reclaimsOfUnseen = 0;

  constructor(clock: FakeClock) {
    super(clock, tableDecisions(TTL_MS));
  }

  override async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    const outcome = await super.claim(key, leaseMs);
    if (outcome.status !== "won") return outcome;
    if (this.unseen.delete(key)) this.reclaimsOfUnseen += 1;
    this.wins += 1;
    if (this.wins % 2 === 1) return outcome;
    // This write took its whole lease: the win stands in the store, the answer says held.
    this.clock.advance(leaseMs);
    this.unseen.add(key);
    return unlessLapsed(outcome, this.clock.now());
  }
}

function target(lapsedWinAnswersHeld: boolean) {
  const clock = createFakeClock(1_000_000);
  const backend = new LapsingLock(clock);
  return {
    backend,
    run: checkAgainstTable(
      {
        name: "a store whose wins lapse on return",
        backend,
        leaseMs: LEASE_MS,
        ttlMs: TTL_MS,
        clock,
        deletesExpired: false,
        ...(lapsedWinAnswersHeld ? { lapsedWinAnswersHeld } : {}),
      },
      { numRuns: 300 },
    ),
  };
}

describe("the model on a store that answers a lapsed win held", () => {
  it("accepts the reclaim of a record whose fence was never seen", async () => {
    const { backend, run } = target(true);
    await run;
    expect(backend.reclaimsOfUnseen, "no sequence reclaimed an unseen fence").toBeGreaterThan(0);
  });

  it("control: declared as a store that never does, the same store fails the model", async () => {
    const { run } = target(false);
    await expect(run).rejects.toThrow("the table allows:");
  });
});
