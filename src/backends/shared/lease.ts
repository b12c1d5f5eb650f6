import type { ClaimOutcome } from "../../core/types.js";

/**
 * For the backends that judge leases by this process's clock (Datastore, Firestore): a claim
 * whose write waited out its whole lease (retries behind the store's lock timeouts take
 * seconds) has lapsed by the time it returns, and another claimer may have reclaimed it
 * already. Such a win is not handed to a body: it answers `held` instead, and the record,
 * still claimed with a lapsed lease, is reclaimed at fence + 1 by the redelivery.
 */
export function unlessLapsed(outcome: ClaimOutcome, now: number): ClaimOutcome {
  if (outcome.status !== "won" || now < outcome.claim.leaseExpiresAt) return outcome;
  return { status: "held", leaseExpiresAt: outcome.claim.leaseExpiresAt };
}
