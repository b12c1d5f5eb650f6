import { describeClaimCases } from "./contract-claim.js";
import {
  type CaseOptions,
  type ContractContext,
  DEFAULT_CASE_TIMEOUT_MS,
} from "./contract-context.js";
import { describeFencedCases } from "./contract-fenced.js";
import { describeKeyAndLimitCases } from "./contract-keys.js";
import { describeOperatorCases } from "./contract-operator.js";
import { describePurgeCase } from "./contract-purge.js";
import { describeRecordCases } from "./contract-records.js";
import { globalRunner, type TestRunner } from "./contract-runner.js";
import { describeScenarioCases } from "./contract-scenarios.js";
import {
  assertHasMethods,
  type BackendWith,
  CaseDoesNotApply,
  type OptionalMethod,
  skipRunningCase,
} from "./contract-skip.js";
import type { BackendContractTarget } from "./contract-target.js";
import { describeTransactionCases } from "./contract-transactions.js";
import { warmUpBackend } from "./warm-up.js";

const realSleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/**
 * Register the backend contract: every row of the record state machine plus the
 * scenarios every backend must survive. Call it at the top level of a test file: it registers
 * `describe` blocks and cases with `runner` (see {@link TestRunner}; {@link nodeTestRunner}
 * for `node:test`). Without a runner it uses the global `describe`, `it` and `beforeAll`
 * (jest, or vitest with `globals: true`), and throws a TypeError when there are none; under
 * vitest, `describeBackendContract` from `gcp-pubsub-idempotency/testing/vitest` passes
 * vitest's own. The cases assert with `node:assert`.
 *
 * @example
 * ```ts
 * import { RedisLock } from "gcp-pubsub-idempotency/redis";
 * import { describeBackendContract } from "gcp-pubsub-idempotency/testing";
 * import { Redis } from "ioredis";
 * import { beforeAll, describe, it } from "vitest"; // or "@jest/globals"
 *
 * const client = new Redis("redis://127.0.0.1:6379");
 * describeBackendContract({
 *   name: "redis",
 *   create: ({ ttlMs }) => new RedisLock({ client, ttlMs, prefix: `test-${Date.now()}:` }),
 *   leaseMs: 150, // short leases against the store's real clock
 *   latencyFactor: 10, // but at least 10 times its slowest call while warming up
 * }, { describe, it, beforeAll });
 * ```
 */
export function describeBackendContract<Tx>(
  target: BackendContractTarget<Tx>,
  runner: TestRunner | undefined = globalRunner(),
): void {
  if (!runner) {
    throw new TypeError(
      "describeBackendContract needs a test runner: pass { describe, it, beforeAll } " +
        "(nodeTestRunner(test) for node:test), or under vitest import it from " +
        '"gcp-pubsub-idempotency/testing/vitest"',
    );
  }
  const { describe, it, beforeAll, afterAll } = runner;
  const { cleanup } = target;
  if (cleanup !== undefined && afterAll === undefined) {
    throw new TypeError(
      "describeBackendContract: the target has cleanup(), and the runner has no afterAll to " +
        "call it in: pass { describe, it, beforeAll, afterAll } (nodeTestRunner(test) for node:test)",
    );
  }
  const givenLeaseMs = target.leaseMs ?? 150;
  const givenTtlMs = target.ttlMs ?? givenLeaseMs * 4;
  const latencyFactor = target.latencyFactor ?? 10;
  if (!(Number.isFinite(latencyFactor) && latencyFactor >= 0)) {
    throw new RangeError(`latencyFactor must be a non-negative number, got ${latencyFactor}`);
  }
  const maxLeaseMs = Math.max(givenLeaseMs, MAX_SIZED_LEASE_MS);
  // Room for a case to wait out the ttl of the largest sized lease, and a slow store's calls.
  const caseTimeoutMs =
    DEFAULT_CASE_TIMEOUT_MS + Math.round((givenTtlMs * maxLeaseMs) / givenLeaseMs) + 2 * maxLeaseMs;
  // Set by the warm-up before the first case; every case reads them when it runs.
  let leaseMs = givenLeaseMs;
  let ttlMs = givenTtlMs;
  // Time that certainly carries a lease (or a ttl) past its end, with slack for clock jitter.
  let slack = slackFor(leaseMs);
  const advance = async (ms: number) => {
    await (target.advance ?? realSleep)(ms);
  };
  const runId = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  let counter = 0;
  const freshKey = (label: string) => `contract:${runId}:${label}:${counter++}`;

  // Only the cases about expiry get the short ttl: on a busy machine, completing a few dozen
  // keys one after another can take longer than it, and a case that then expects "done"
  // would meet an expired record.
  const LONG_TTL_MS = 10 * 60_000;
  // A case with `needs` applies only to a backend with those optional methods: on any other
  // it is reported skipped, naming them (see TestRunner), as is one that throws
  // CaseDoesNotApply. Never passed.
  const makeCase =
    (shortTtl: boolean) =>
    <M extends OptionalMethod = never>(
      title: string,
      fn: (backend: BackendWith<M>) => Promise<void>,
      options: CaseOptions<M> = {},
    ) =>
      it(
        title,
        // No declared parameter (jest would take one for a `done` callback): the context,
        // if the runner passes one, is the first argument.
        async (...args: unknown[]) => {
          const backend = await target.create({
            ttlMs: shortTtl ? ttlMs : Math.max(ttlMs, LONG_TTL_MS),
          });
          let notApplicable: string | undefined;
          try {
            assertHasMethods(backend, options.needs ?? []);
            await fn(backend);
          } catch (error) {
            if (!(error instanceof CaseDoesNotApply)) throw error;
            notApplicable = error.message;
          } finally {
            await backend.close?.();
          }
          if (notApplicable !== undefined) skipRunningCase(runner.skip, args[0], notApplicable);
        },
        options.timeoutMs ?? caseTimeoutMs,
      );
  const withBackend = makeCase(false);
  const withShortTtl = makeCase(true);

  describe(`LockBackend contract: ${target.name}`, () => {
    beforeAll(async () => {
      const backend = await target.create({ ttlMs: givenTtlMs });
      try {
        const { coldMs, slowestMs } = await warmUpBackend(backend, {
          keyPrefix: `${freshKey("warm-up")}:`,
        });
        // An injected clock does not move while a call runs: no call can outlast a lease.
        const neededMs = target.advance ? 0 : Math.ceil(latencyFactor * slowestMs);
        if (neededMs > givenLeaseMs) {
          leaseMs = Math.min(neededMs, maxLeaseMs);
          ttlMs = Math.round((givenTtlMs * leaseMs) / givenLeaseMs);
          slack = slackFor(leaseMs);
          console.info(
            `[contract] ${target.name}: warm-up ${coldMs} ms, slowest call after it ` +
              `${slowestMs} ms: short lease ${givenLeaseMs} → ${leaseMs} ms, ttl ${ttlMs} ms`,
          );
        }
      } finally {
        await backend.close?.();
      }
    }, WARM_UP_TIMEOUT_MS);
    if (cleanup !== undefined && afterAll !== undefined) {
      afterAll(async () => {
        await cleanup.call(target);
      }, CLEANUP_TIMEOUT_MS);
    }

    const c: ContractContext = {
      target: target as BackendContractTarget<unknown>,
      runner,
      describe,
      it,
      freshKey,
      advance,
      withBackend,
      withShortTtl,
      leaseMs: () => leaseMs,
      ttlMs: () => ttlMs,
      slack: () => slack,
    };
    describeClaimCases(c);
    describeFencedCases(c);
    describeOperatorCases(c);
    describeScenarioCases(c);

    describe("purgeExpired (when the backend has it)", () => {
      describePurgeCase(c);
    });

    describeKeyAndLimitCases(c);
    describeRecordCases(c);
    describeTransactionCases(target.transactional, c);
  });
}

/** The sized short lease never goes past this (unless `leaseMs` itself does). */
const MAX_SIZED_LEASE_MS = 5_000;
/** A cold emulator's first writes take seconds on a busy machine. */
const WARM_UP_TIMEOUT_MS = 120_000;
/** The target's cleanup: dropping a hundred tables, or deleting a namespace's records. */
const CLEANUP_TIMEOUT_MS = 120_000;

function slackFor(leaseMs: number): number {
  return Math.max(20, Math.round(leaseMs / 3));
}
