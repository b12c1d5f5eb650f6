// What every group of the contract suite gets from describeBackendContract: the runner, the
// target, fresh keys, the clock, and the lease and ttl the warm-up sized (read when a case runs).
import type { Claim, ClaimOutcome } from "../core/port.js";
import type { TestRunner } from "./contract-runner.js";
import type { BackendWith, OptionalMethod } from "./contract-skip.js";
import type { BackendContractTarget } from "./contract-target.js";

/** Options of one contract case. */
export interface CaseOptions<M extends OptionalMethod> {
  /** The optional backend methods the case needs: skipped, naming them, on a backend without. */
  readonly needs?: readonly M[];
  /** Default: the suite's case timeout. */
  readonly timeoutMs?: number;
}

/** Registers a case run on a fresh backend; skipped, naming them, when it lacks `needs`. */
export type RegisterCase = <M extends OptionalMethod = never>(
  title: string,
  fn: (backend: BackendWith<M>) => Promise<void>,
  options?: CaseOptions<M>,
) => void;

export interface ContractContext {
  readonly target: BackendContractTarget<unknown>;
  readonly runner: TestRunner;
  readonly describe: TestRunner["describe"];
  readonly it: TestRunner["it"];
  /** A key no other case of this run uses. */
  readonly freshKey: (label: string) => string;
  /** Moves the target's clock, or sleeps on a real one. */
  readonly advance: (ms: number) => Promise<void>;
  /** A case on a backend with a long ttl (records stay done while the case runs). */
  readonly withBackend: RegisterCase;
  /** A case on a backend with the short ttl: the cases about expiry. */
  readonly withShortTtl: RegisterCase;
  /** The short lease, as the warm-up sized it. */
  readonly leaseMs: () => number;
  /** The short ttl, as the warm-up sized it. */
  readonly ttlMs: () => number;
  /** Time that surely carries a lease or a ttl past its end, with room for clock jitter. */
  readonly slack: () => number;
}

/** The claim of a won outcome; anything else fails the case, showing what came instead. */
export function won(outcome: ClaimOutcome): Claim {
  if (outcome.status !== "won") {
    throw new Error(`expected the claim to be won, got ${JSON.stringify(outcome)}`);
  }
  return outcome.claim;
}

export const silent = { info() {}, warn() {}, error() {} };

/** The lease of the lease-end case: long enough that a lease ignored, or taken as seconds, shows. */
export const LEASE_END_CASE_LEASE_MS = 60_000;
/**
 * How far a fresh win's lease end may stray from the clock readings taken just before and
 * just after the claim, plus the lease: a store that keeps whole seconds, and the skew
 * between this process's clock and the store's when the suite has to compare with
 * `Date.now()`. Far less than the lease, so a lease ending now, or at the ttl, fails.
 */
export const LEASE_END_TOLERANCE_MS = 1_000;
/** A case that never waits out a lease (no `advance`) has this long. */
export const DEFAULT_CASE_TIMEOUT_MS = 30_000;
