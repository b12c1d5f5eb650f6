import type { Claim, ClaimOutcome } from "../../src/index.js";

/** The claim of a won outcome; any other outcome fails the test, showing what came instead. */
export function won(outcome: ClaimOutcome): Claim {
  if (outcome.status !== "won") throw new Error(`expected won, got ${JSON.stringify(outcome)}`);
  return outcome.claim;
}
