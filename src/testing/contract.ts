// The backend contract suite: every row of the transition table, expiry, fencing, races and
// hostile keys, asserted through the port alone on a real store. One file over 350 lines
// because it is one suite: its cases share the target, the warm-up and the lease sizing.
import { MAX_KEY_BYTES, MAX_LEASE_MS, MAX_TTL_MS } from "../core/constants.js";
import type { Claim, ClaimOutcome, LockBackend } from "../core/port.js";
import { lock, mutex } from "../core/verbs/lock.js";
import { describePurgeCase } from "./contract-purge.js";
import {
  assertHasMethods,
  type BackendWith,
  CaseDoesNotApply,
  type OptionalMethod,
  skipRunningCase,
} from "./contract-skip.js";
import {
  describeTransactionCases,
  type TransactionalContractTarget,
} from "./contract-transactions.js";
import { expect } from "./expect.js";
import { warmUpBackend } from "./warm-up.js";

/**
 * The test runner the contract suite registers its cases with: `describe`, `it` with a
 * per-case timeout in ms, and `beforeAll` (the warm-up) with its own timeout. vitest's and
 * jest's `{ describe, it, beforeAll }` fit as they are; for `node:test` use
 * {@link nodeTestRunner}. The suite itself asserts with `node:assert`, so it loads no runner.
 *
 * A case that needs an optional backend method (renew, inspect, forceRelease, purgeExpired)
 * the backend lacks is reported skipped, naming the method: through `skip` when the runner
 * has it, else through the context `it` handed the case when that can skip (vitest's
 * `context.skip`, node:test's `t.skip`). Under a runner with neither (jest) such a case fails,
 * saying so: a case that did not run is never reported as passed.
 *
 * @example
 * ```ts
 * import { InMemoryLock } from "gcp-pubsub-idempotency";
 * import { describeBackendContract, type TestRunner } from "gcp-pubsub-idempotency/testing";
 * import { afterAll, beforeAll, describe, it } from "vitest"; // or "@jest/globals"
 *
 * const runner: TestRunner = { describe, it, beforeAll, afterAll };
 * describeBackendContract({ name: "memory", create: ({ ttlMs }) => new InMemoryLock({ ttlMs }) }, runner);
 * ```
 */
export interface TestRunner {
  /** Register a group; `body` registers its cases synchronously. */
  describe(name: string, body: () => void): unknown;
  /**
   * Register a case that fails when `body` rejects or runs longer than `timeoutMs`. Pass
   * `body` the runner's test context, if it has one (vitest's, node:test's `t`): the suite
   * skips a case through it. `body` declares no parameter, so jest does not take it for a
   * `done` callback.
   */
  it(name: string, body: (context?: unknown) => Promise<void>, timeoutMs: number): unknown;
  /** Run `body` once before the first case of the enclosing group, within `timeoutMs`. */
  beforeAll(body: () => Promise<void>, timeoutMs: number): unknown;
  /**
   * Optional: run `body` once after the last case of the enclosing group, within `timeoutMs`
   * (vitest's and jest's `afterAll`, node:test's `after`). The suite calls the target's
   * `cleanup` in it; a target with `cleanup` needs a runner with `afterAll`.
   */
  afterAll?(body: () => Promise<void>, timeoutMs: number): unknown;
  /**
   * Optional: mark the running case skipped, with `reason`, given the `context` that `it`
   * handed its body. It may throw to stop the case (vitest's `context.skip` does) or return
   * (node:test's `t.skip`); the suite runs nothing of the case after it either way.
   */
  skip?(context: unknown, reason: string): void;
}

/**
 * The parts of `node:test` that {@link nodeTestRunner} uses (the module itself fits).
 *
 * @example
 * ```ts
 * import * as test from "node:test";
 * import type { NodeTestFunctions } from "gcp-pubsub-idempotency/testing";
 *
 * const functions: NodeTestFunctions = test;
 * ```
 */
export interface NodeTestFunctions {
  /** `node:test`'s `describe`. */
  describe(name: string, fn: () => void): unknown;
  /** `node:test`'s `it`, called as `it(name, { timeout }, fn)`; `fn` gets the test context. */
  it(
    name: string,
    options: { timeout: number },
    fn: (t: { skip(message?: string): void }) => Promise<void>,
  ): unknown;
  /** `node:test`'s `before`, called as `before(fn, { timeout })`. */
  before(fn: () => Promise<void>, options: { timeout: number }): unknown;
  /** `node:test`'s `after`, called as `after(fn, { timeout })`: runs the target's `cleanup`. */
  after?(fn: () => Promise<void>, options: { timeout: number }): unknown;
}

/**
 * A {@link TestRunner} over `node:test`: each case's timeout goes in its options, the warm-up
 * runs in `before`, and a case that does not apply to the backend is skipped with `t.skip`
 * (TAP `# SKIP`, with the reason). Run the file with `node --test` (plus a TypeScript loader
 * such as `--import tsx` for a .ts file).
 *
 * @example
 * ```ts
 * import * as test from "node:test";
 * import { InMemoryLock } from "gcp-pubsub-idempotency";
 * import { describeBackendContract, nodeTestRunner } from "gcp-pubsub-idempotency/testing";
 *
 * describeBackendContract(
 *   { name: "InMemoryLock", create: ({ ttlMs }) => new InMemoryLock({ ttlMs }) },
 *   nodeTestRunner(test),
 * );
 * ```
 */
export function nodeTestRunner(test: NodeTestFunctions): TestRunner {
  const { after } = test;
  return {
    describe: (name, body) => test.describe(name, body),
    it: (name, body, timeoutMs) => test.it(name, { timeout: timeoutMs }, (t) => body(t)),
    beforeAll: (body, timeoutMs) => test.before(body, { timeout: timeoutMs }),
    ...(after === undefined
      ? {}
      : { afterAll: (body, timeoutMs) => after.call(test, body, { timeout: timeoutMs }) }),
    skip: (t, reason) => (t as { skip(message?: string): void }).skip(reason),
  };
}

/** The runner's globals (jest's default, vitest with `globals: true`), if they are there. */
function globalRunner(): TestRunner | undefined {
  const { describe, it, beforeAll, afterAll } = globalThis as Record<string, unknown>;
  if (typeof describe !== "function" || typeof it !== "function") return undefined;
  if (typeof beforeAll !== "function") return undefined;
  return (
    typeof afterAll === "function"
      ? { describe, it, beforeAll, afterAll }
      : { describe, it, beforeAll }
  ) as TestRunner;
}

/**
 * What the contract suite needs to know about a backend under test.
 *
 * @example
 * ```ts
 * import { InMemoryLock } from "gcp-pubsub-idempotency";
 * import { type BackendContractTarget, createFakeClock } from "gcp-pubsub-idempotency/testing";
 *
 * const clock = createFakeClock();
 * const target: BackendContractTarget = {
 *   name: "memory (fake clock)",
 *   create: ({ ttlMs }) => new InMemoryLock({ ttlMs, now: clock.now }),
 *   advance: clock.advance,
 * };
 * ```
 */
export interface BackendContractTarget<Tx = unknown> {
  /** Shown in the test names, e.g. "redis (ioredis)". */
  name: string;
  /**
   * A backend over an isolated store (its own prefix, table or namespace is best), with
   * the given ttl. Called once per test (and once for the warm-up); give `cleanup` to remove
   * what it made.
   */
  create(options: { ttlMs: number }): LockBackend | Promise<LockBackend>;
  /**
   * Remove what `create` made: its tables, collections, key prefixes or namespaces. Called
   * once, after the last case (in the runner's `afterAll`), every backend closed by then. The
   * suite cannot know what a `create` made, so without `cleanup` it all stays behind, a table
   * per case on SQL. Needs a runner with `afterAll` (vitest's, jest's, node:test's `after`).
   *
   * @example
   * ```ts
   * import { SqlLock } from "gcp-pubsub-idempotency/sql";
   * import type { BackendContractTarget } from "gcp-pubsub-idempotency/testing";
   * import pg from "pg";
   *
   * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
   * const tables: string[] = [];
   * const target: BackendContractTarget = {
   *   name: "SqlLock postgres",
   *   create: async ({ ttlMs }) => {
   *     const table = `contract_${Date.now().toString(36)}_${tables.length}`;
   *     tables.push(table);
   *     const backend = new SqlLock({ client: pool, table, ttlMs });
   *     await backend.ensureSchema();
   *     return backend;
   *   },
   *   cleanup: async () => {
   *     for (const table of tables.splice(0)) await pool.query(`DROP TABLE IF EXISTS ${table}`);
   *   },
   * };
   * ```
   */
  cleanup?(): void | Promise<void>;
  /**
   * Let `ms` of the backend's time pass. Default: a real sleep, for stores with their own
   * clock. InMemoryLock with a fake clock passes `clock.advance`.
   */
  advance?(ms: number): void | Promise<void>;
  /**
   * The backend's clock, epoch ms: the lease-end case compares a won claim's
   * `leaseExpiresAt` with it. Default: the `now` of the backend's `inspect()`, else
   * `Date.now()` around the claim. A target with `advance` and a backend without `inspect`
   * must pass it (InMemoryLock with a fake clock: `clock.now`), or that case is skipped.
   */
  now?(): number | Promise<number>;
  /**
   * A short lease for the timing cases; default 150 ms. Raised for a slow store: see
   * `latencyFactor`.
   */
  leaseMs?: number;
  /** A short ttl for the expiry cases; default 4 × leaseMs (raised with the lease). */
  ttlMs?: number;
  /**
   * Before the first case the suite warms the store up on a backend from `create` (see
   * {@link warmUpBackend}: no case pays for a cold connection or an emulator's first write)
   * and measures its slowest call. The short lease is then at least this many times that
   * call, and the ttl grows in proportion, so a busy machine's slow write never outlasts a
   * lease a case expects to hold. Default 10. 0 keeps `leaseMs` and `ttlMs` as given (the
   * warm-up still runs), as does a target with `advance`, whose clock stands still during a
   * call. The lease is never raised past 5 s (or `leaseMs`, if longer); each case has a
   * timeout of its own, long enough to wait out the ttl of the longest lease.
   */
  latencyFactor?: number;
  /** Claims started at once in the race case; default 32. */
  concurrency?: number;
  /** Skip the race case (a store whose claims are serialized anyway still passes it). */
  skipConcurrency?: boolean;
  /**
   * For a backend with `completeInTransaction` (a `TransactionalLockBackend`): how to write
   * and read a business row through its transactions, so the lockInTransaction cases run.
   * Without it the suite checks that lockInTransaction refuses the backend before any I/O,
   * and fails if the backend does offer transactions.
   */
  transactional?: TransactionalContractTarget<Tx>;
}

/** Options of one contract case. */
interface CaseOptions<M extends OptionalMethod> {
  /** The optional backend methods the case needs: skipped, naming them, on a backend without. */
  needs?: readonly M[];
  /** Default: the suite's case timeout. */
  timeoutMs?: number;
}

const realSleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function won(outcome: ClaimOutcome): Claim {
  if (outcome.status !== "won") {
    throw new Error(`expected the claim to be won, got ${JSON.stringify(outcome)}`);
  }
  return outcome.claim;
}

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

    describe("claim", () => {
      withBackend("absent → won at a positive fence", async (b) => {
        const key = freshKey("absent");
        const claim = won(await b.claim(key, leaseMs));
        expect(claim.key).toBe(key);
        // The first fence is the store's own (a clock reading or a sequence), not always 1.
        expect(Number.isSafeInteger(claim.fencingId) && claim.fencingId > 0).toBe(true);
        expect(Number.isSafeInteger(claim.leaseExpiresAt)).toBe(true);
      });

      withBackend(
        `absent → won with a lease ending leaseMs after the claim, by the store's clock (±${LEASE_END_TOLERANCE_MS} ms)`,
        async (b) => {
          const key = freshKey("lease-end");
          const probe = freshKey("lease-end-probe");
          // A clock reading before the claim and one after it: the target's clock, else the
          // store's (inspect's `now`, read on a record of the case's own), else this process's.
          let read: (key: string) => Promise<number>;
          if (target.now) {
            const now = target.now.bind(target);
            read = async () => now();
          } else if (b.inspect) {
            const inspect = b.inspect.bind(b);
            won(await b.claim(probe, LEASE_END_CASE_LEASE_MS));
            read = async (of) => {
              const record = await inspect(of);
              if (record === undefined) throw new Error(`inspect found no record of ${of}`);
              return record.now;
            };
          } else if (!target.advance) {
            read = async () => Date.now();
          } else {
            throw new CaseDoesNotApply(
              "the target moves its own clock (advance) but has no now(), and the backend " +
                "has no inspect(): there is no clock to compare the lease end with",
            );
          }
          const before = await read(probe);
          const claim = won(await b.claim(key, LEASE_END_CASE_LEASE_MS));
          const after = await read(key);
          expect(claim.leaseExpiresAt).toBeGreaterThanOrEqual(
            before + LEASE_END_CASE_LEASE_MS - LEASE_END_TOLERANCE_MS,
          );
          expect(claim.leaseExpiresAt).toBeLessThanOrEqual(
            after + LEASE_END_CASE_LEASE_MS + LEASE_END_TOLERANCE_MS,
          );
        },
      );

      withBackend("claimed, lease live → held with the holder's lease end", async (b) => {
        const key = freshKey("held");
        const first = won(await b.claim(key, 60_000));
        const second = await b.claim(key, 60_000);
        expect(second).toEqual({ status: "held", leaseExpiresAt: first.leaseExpiresAt });
      });

      withBackend(
        "claimed, lease lapsed → won at fence + 1 (a crashed holder self-heals)",
        async (b) => {
          const key = freshKey("crashed");
          const first = won(await b.claim(key, leaseMs));
          // The holder "crashes": it never completes or releases.
          await advance(leaseMs + slack);
          const second = won(await b.claim(key, leaseMs));
          expect(second.fencingId).toBe(first.fencingId + 1);
          expect(second.leaseExpiresAt).toBeGreaterThanOrEqual(first.leaseExpiresAt);
        },
      );

      withBackend("done, within ttl → done", async (b) => {
        const key = freshKey("done");
        const claim = won(await b.claim(key, leaseMs));
        expect(await b.complete(claim)).toBe(true);
        expect(await b.claim(key, leaseMs)).toEqual({ status: "done" });
      });

      withShortTtl("done, ttl elapsed → won again at a higher fence", async (b) => {
        const key = freshKey("ttl");
        const claim = won(await b.claim(key, leaseMs));
        expect(await b.complete(claim)).toBe(true);
        await advance(ttlMs + slack);
        const again = won(await b.claim(key, leaseMs));
        // +1 while the record exists; a store that already deleted it starts a new record above.
        expect(again.fencingId).toBeGreaterThan(claim.fencingId);
      });

      withShortTtl(
        "a fence never restarts: after the record is deleted past its ttl, the old claim cannot complete, release or renew the next one",
        async (b) => {
          const key = freshKey("fence-restart");
          // The first holder outlives its lease and the record's ttl: a ttl shorter than its life.
          const old = won(await b.claim(key, leaseMs));
          await advance(leaseMs + ttlMs + slack);
          // Delete the expired record where the store does not do it by itself (Redis does).
          await b.purgeExpired?.();
          const next = won(await b.claim(key, 60_000));
          expect(next.fencingId).toBeGreaterThan(old.fencingId);
          if (b.renew) expect(await b.renew(old, 60_000)).toBe(false);
          await b.release(old);
          expect(await b.complete(old)).toBe(false);
          // The new holder's record is untouched: still held to its own lease end, and its own.
          expect(await b.claim(key, 60_000)).toEqual({
            status: "held",
            leaseExpiresAt: next.leaseExpiresAt,
          });
          expect(await b.complete(next)).toBe(true);
          expect(await b.claim(key, leaseMs)).toEqual({ status: "done" });
        },
      );
    });

    describe("complete", () => {
      withBackend("fence matches → true, and the key is done", async (b) => {
        const key = freshKey("complete");
        const claim = won(await b.claim(key, leaseMs));
        expect(await b.complete(claim)).toBe(true);
        expect((await b.claim(key, leaseMs)).status).toBe("done");
      });

      withBackend(
        "commits on a fence match even after the lease lapsed (no lease guard)",
        async (b) => {
          const key = freshKey("late-complete");
          const claim = won(await b.claim(key, leaseMs));
          await advance(leaseMs + slack);
          expect(await b.complete(claim)).toBe(true);
          expect((await b.claim(key, leaseMs)).status).toBe("done");
        },
      );

      withBackend("a retried complete on a done record → true", async (b) => {
        const key = freshKey("complete-twice");
        const claim = won(await b.claim(key, leaseMs));
        expect(await b.complete(claim)).toBe(true);
        expect(await b.complete(claim)).toBe(true);
        expect((await b.claim(key, leaseMs)).status).toBe("done");
      });

      withBackend("a zombie cannot complete over a newer claim", async (b) => {
        const key = freshKey("zombie-complete");
        const zombie = won(await b.claim(key, leaseMs));
        await advance(leaseMs + slack);
        const current = won(await b.claim(key, 60_000));
        expect(await b.complete(zombie)).toBe(false);
        // The newer holder is untouched and still owns the key.
        expect(await b.claim(key, 60_000)).toEqual({
          status: "held",
          leaseExpiresAt: current.leaseExpiresAt,
        });
        expect(await b.complete(current)).toBe(true);
        expect(await b.complete(zombie)).toBe(false);
      });

      withBackend("a claim for a key never claimed cannot complete", async (b) => {
        const key = freshKey("never");
        const forged: Claim = { key, fencingId: 1, leaseExpiresAt: Date.now() + 60_000 };
        expect(await b.complete(forged)).toBe(false);
        expect(won(await b.claim(key, leaseMs)).key).toBe(key);
      });
    });

    describe("release", () => {
      withBackend("advances the fence and frees the key at once", async (b) => {
        const key = freshKey("release");
        const first = won(await b.claim(key, 60_000));
        await b.release(first);
        const second = won(await b.claim(key, 60_000));
        expect(second.fencingId).toBe(first.fencingId + 1 + 1);
      });

      withBackend("a released claim can never complete later", async (b) => {
        const key = freshKey("release-complete");
        const first = won(await b.claim(key, 60_000));
        await b.release(first);
        expect(await b.complete(first)).toBe(false);
        expect(won(await b.claim(key, leaseMs)).fencingId).toBeGreaterThan(first.fencingId);
      });

      withBackend("a zombie cannot release over a newer claim", async (b) => {
        const key = freshKey("zombie-release");
        const zombie = won(await b.claim(key, leaseMs));
        await advance(leaseMs + slack);
        const current = won(await b.claim(key, 60_000));
        await b.release(zombie);
        expect(await b.claim(key, 60_000)).toEqual({
          status: "held",
          leaseExpiresAt: current.leaseExpiresAt,
        });
        expect(await b.complete(current)).toBe(true);
      });

      withBackend("release on a done record is a no-op", async (b) => {
        const key = freshKey("release-done");
        const claim = won(await b.claim(key, leaseMs));
        expect(await b.complete(claim)).toBe(true);
        await b.release(claim);
        expect((await b.claim(key, leaseMs)).status).toBe("done");
      });
    });

    describe("renew (when the backend has it)", () => {
      withBackend(
        "fence matches → true, and the lease moves forward",
        async (b) => {
          const key = freshKey("renew");
          const claim = won(await b.claim(key, leaseMs));
          await advance(Math.round(leaseMs / 2));
          expect(await b.renew(claim, 60_000)).toBe(true);
          await advance(leaseMs + slack);
          // Past the first lease, but the renewal keeps it held.
          const outcome = await b.claim(key, leaseMs);
          expect(outcome.status).toBe("held");
          expect(await b.complete(claim)).toBe(true);
        },
        { needs: ["renew"] },
      );

      withBackend(
        "stale fence or done record → false",
        async (b) => {
          const key = freshKey("renew-stale");
          const zombie = won(await b.claim(key, leaseMs));
          await advance(leaseMs + slack);
          const current = won(await b.claim(key, leaseMs));
          expect(await b.renew(zombie, 60_000)).toBe(false);
          expect(await b.complete(current)).toBe(true);
          expect(await b.renew(current, 60_000)).toBe(false);
          expect((await b.claim(key, leaseMs)).status).toBe("done");
        },
        { needs: ["renew"] },
      );
    });

    describe("operator calls: inspect and forceRelease (when the backend has them)", () => {
      withBackend(
        "inspect: an absent key → undefined",
        async (b) => {
          expect(await b.inspect(freshKey("inspect-absent"))).toBe(undefined);
        },
        { needs: ["inspect"] },
      );

      withBackend(
        "inspect: a held key → claimed, its fence and lease, in the store's clock",
        async (b) => {
          const key = freshKey("inspect-held");
          const claim = won(await b.claim(key, 60_000));
          const record = await b.inspect(key);
          expect(record).toMatchObject({
            key,
            state: "claimed",
            fencingId: claim.fencingId,
            leaseExpiresAt: claim.leaseExpiresAt,
          });
          const { now, expiresAt } = record as NonNullable<typeof record>;
          expect(Number.isSafeInteger(now) && Number.isSafeInteger(expiresAt)).toBe(true);
          expect(claim.leaseExpiresAt).toBeGreaterThan(now);
          expect(expiresAt).toBeGreaterThan(claim.leaseExpiresAt);
        },
        { needs: ["inspect"] },
      );

      withBackend(
        "inspect: a done key → done, expiring after now",
        async (b) => {
          const key = freshKey("inspect-done");
          const claim = won(await b.claim(key, leaseMs));
          expect(await b.complete(claim)).toBe(true);
          const record = await b.inspect(key);
          expect(record).toMatchObject({ key, state: "done", fencingId: claim.fencingId });
          const { now, expiresAt } = record as NonNullable<typeof record>;
          expect(expiresAt).toBeGreaterThan(now);
        },
        { needs: ["inspect"] },
      );

      withBackend(
        "forceRelease at the held fence → released; the next claim wins at fence + 2 and the old holder is fenced out",
        async (b) => {
          const key = freshKey("force-release");
          const stuck = won(await b.claim(key, 60_000));
          expect(await b.forceRelease(key, stuck.fencingId)).toEqual({
            status: "released",
            fencingId: stuck.fencingId + 1,
          });
          const next = won(await b.claim(key, 60_000));
          expect(next.fencingId).toBe(stuck.fencingId + 2);
          expect(await b.complete(stuck)).toBe(false);
          expect(await b.complete(next)).toBe(true);
        },
        { needs: ["forceRelease"] },
      );

      withBackend(
        "forceRelease with another fence → changed, the claim untouched",
        async (b) => {
          const key = freshKey("force-release-changed");
          const holder = won(await b.claim(key, 60_000));
          expect(await b.forceRelease(key, holder.fencingId + 1)).toEqual({
            status: "changed",
            fencingId: holder.fencingId,
          });
          expect(await b.claim(key, 60_000)).toEqual({
            status: "held",
            leaseExpiresAt: holder.leaseExpiresAt,
          });
          expect(await b.complete(holder)).toBe(true);
        },
        { needs: ["forceRelease"] },
      );

      withBackend(
        "forceRelease never touches a done record, nor an absent one",
        async (b) => {
          const key = freshKey("force-release-done");
          const claim = won(await b.claim(key, leaseMs));
          expect(await b.complete(claim)).toBe(true);
          expect(await b.forceRelease(key, claim.fencingId)).toEqual({ status: "done" });
          expect(await b.claim(key, leaseMs)).toEqual({ status: "done" });
          expect(await b.forceRelease(freshKey("force-release-absent"), 1)).toEqual({
            status: "absent",
          });
        },
        { needs: ["forceRelease"] },
      );
    });

    describe("scenarios", () => {
      withBackend("the fence only rises while the record exists", async (b) => {
        const key = freshKey("rising");
        const fences: number[] = [];
        let claim = won(await b.claim(key, 60_000));
        fences.push(claim.fencingId);
        for (let i = 0; i < 3; i++) {
          await b.release(claim);
          claim = won(await b.claim(key, 60_000));
          fences.push(claim.fencingId);
        }
        expect(fences).toEqual([...fences].sort((x, y) => x - y));
        expect(new Set(fences).size).toBe(fences.length);
      });

      withBackend("a mutex cycles claim → release without ever completing", async (b) => {
        const key = freshKey("mutex");
        const seen: number[] = [];
        for (let i = 0; i < 3; i++) {
          await mutex(key, { backend: b, leaseMs: 60_000, logger: silent }, (claim) => {
            seen.push(claim.fencingId);
          });
        }
        expect(seen).toHaveLength(3);
        expect(seen[1]! > seen[0]! && seen[2]! > seen[1]!).toBe(true);
        // Never DONE: the next claim wins straight away.
        expect((await b.claim(key, leaseMs)).status).toBe("won");
      });

      withBackend("lock runs the body once; a redelivery is a Duplicate", async (b) => {
        const key = freshKey("lock");
        let runs = 0;
        await lock(key, { backend: b, leaseMs: 60_000, logger: silent }, () => {
          runs++;
        });
        await expect(
          lock(key, { backend: b, leaseMs: 60_000, logger: silent }, () => {
            runs++;
          }),
        ).rejects.toMatchObject({ code: "DUPLICATE", key });
        expect(runs).toBe(1);
      });

      if (!target.skipConcurrency) {
        withBackend(
          "concurrent claims on one key admit exactly one",
          async (b) => {
            const key = freshKey("race");
            const n = target.concurrency ?? 32;
            const outcomes = await Promise.all(
              Array.from({ length: n }, () => b.claim(key, 60_000)),
            );
            const winners = outcomes.filter((o) => o.status === "won");
            expect(winners).toHaveLength(1);
            expect(outcomes.filter((o) => o.status === "held")).toHaveLength(n - 1);
          },
          { timeoutMs: 60_000 },
        );
      }

      withBackend(
        "keys are opaque: unicode, '/', quotes, '%', case, spaces, 1,024 bytes",
        async (b) => {
          const base = freshKey("opaque");
          const long = `${base}:${"é".repeat(Math.floor((MAX_KEY_BYTES - base.length - 1) / 2))}`;
          expect(new TextEncoder().encode(long).length).toBeLessThanOrEqual(MAX_KEY_BYTES);
          expect(new TextEncoder().encode(long).length).toBeGreaterThan(MAX_KEY_BYTES - 3);
          const keys = [
            `${base}:a/b/c`,
            `${base}:A/B/C`,
            `${base}:a/b/c `,
            `${base}:'; DROP TABLE x; --`,
            `${base}:"quoted" \\ back`,
            `${base}:100%_like`,
            `${base}:日本語🙂`,
            `${base}:.`,
            `${base}:..`,
            `${base}:__name__`,
            long,
          ];
          const claims = [];
          for (const key of keys) {
            const claim = won(await b.claim(key, 60_000));
            expect(claim.key).toBe(key);
            claims.push(claim);
          }
          for (const claim of claims) expect(await b.complete(claim)).toBe(true);
          for (const key of keys) expect(await b.claim(key, 60_000)).toEqual({ status: "done" });
          // The base key itself was never claimed: none of the others collided with it.
          expect(won(await b.claim(`${base}:a/b`, 60_000)).key).toBe(`${base}:a/b`);
        },
      );
    });

    describe("purgeExpired (when the backend has it)", () => {
      describePurgeCase({
        freshKey,
        leaseMs: () => leaseMs,
        ttlMs: () => ttlMs,
        slack: () => slack,
        advance,
        withShortTtl,
      });
    });

    describeKeyAndLimitCases(target, runner, { freshKey, withBackend });
    describeTransactionCases(target.transactional, {
      freshKey,
      leaseMs: () => leaseMs,
      slack: () => slack,
      advance,
      withBackend,
      describe,
    });
  });
}

/**
 * The key rule (non-empty, well-formed Unicode, no U+0000, at most 1,024 UTF-8 bytes), the
 * lease checked at call time, and the longest lease and ttl read back, on one backend.
 */
function describeKeyAndLimitCases<Tx>(
  target: BackendContractTarget<Tx>,
  { describe, it }: TestRunner,
  helpers: {
    freshKey: (label: string) => string;
    withBackend: (title: string, fn: (backend: LockBackend) => Promise<void>) => void;
  },
): void {
  const { freshKey, withBackend } = helpers;
  const encoder = new TextEncoder();
  const bytesOf = (key: string) => encoder.encode(key).length;
  /** `prefix` filled up to exactly `bytes` UTF-8 bytes with 4-, 2- and 1-byte characters. */
  const fillTo = (prefix: string, bytes: number) => {
    let rest = bytes - bytesOf(prefix);
    const emoji = "🙂".repeat(Math.floor(rest / 8));
    rest -= bytesOf(emoji);
    const accents = "é".repeat(Math.floor(rest / 4));
    rest -= bytesOf(accents);
    return `${prefix}${emoji}${accents}${"k".repeat(rest)}`;
  };
  const refusedKey = { code: "INVALID_KEY" };
  const refusedOption = { code: "INVALID_CONFIGURATION" };

  describe("keys: non-empty, well-formed Unicode, no U+0000, at most 1,024 UTF-8 bytes", () => {
    withBackend(
      "a lone surrogate, U+0000 or an empty key is refused with InvalidKey",
      async (b) => {
        const base = freshKey("malformed");
        const malformed = [
          `${base}:k\uD800`,
          `${base}:k\uDC00`,
          `${base}:a\u0000b`,
          `${base}:\uDC00\uD800`, // a low surrogate before a high one is no pair
          `${base}:${"🙂".slice(0, 1)}`, // half an emoji
          "",
        ];
        for (const key of malformed) {
          await expect(b.claim(key, 60_000)).rejects.toMatchObject(refusedKey);
        }
        // Nothing was written: not under the key as a store would have mangled it (U+FFFD,
        // "?", the NUL dropped or cut at), nor under anything else.
        const lookalikes = [
          `${base}:k`,
          `${base}:k\uFFFD`,
          `${base}:k?`,
          `${base}:a`,
          `${base}:ab`,
          `${base}:a\uFFFDb`,
          `${base}:\uFFFD\uFFFD`,
          `${base}:\uFFFD`,
        ];
        // Each is won: no record of it, live or done, was written.
        for (const key of lookalikes) expect(won(await b.claim(key, 60_000)).key).toBe(key);
      },
    );

    withBackend("complete, release and renew refuse a malformed claim key", async (b) => {
      const base = freshKey("malformed-claim");
      for (const key of [`${base}:k\uD800`, `${base}:a\u0000b`, ""]) {
        const claim: Claim = { key, fencingId: 1, leaseExpiresAt: Date.now() + 60_000 };
        await expect(b.complete(claim)).rejects.toMatchObject(refusedKey);
        await expect(b.release(claim)).rejects.toMatchObject(refusedKey);
        if (b.renew) await expect(b.renew(claim, 60_000)).rejects.toMatchObject(refusedKey);
      }
      expect(won(await b.claim(`${base}:k\uFFFD`, 60_000)).key).toBe(`${base}:k\uFFFD`);
    });

    withBackend("look-alike keys are distinct records", async (b) => {
      const base = freshKey("lookalike");
      const keys = [
        "k",
        "k\uFFFD",
        "k\uFFFD\uFFFD",
        "k?",
        "K",
        "k ",
        "k\u00A0", // no-break space
        "k\u200B", // zero-width space
        "\uFF4B", // fullwidth k
        "\u00E9", // é, NFC
        "e\u0301", // é, NFD
        "\u00C5", // Å
        "\u212B", // Angstrom sign (NFC folds it to Å)
        "\uFB01", // the fi ligature (NFKC folds it to fi)
        "fi",
        "\u200Fk", // a right-to-left mark first
      ].map((suffix) => `${base}:${suffix}`);
      expect(new Set(keys).size).toBe(keys.length);
      const claims: Claim[] = [];
      for (const key of keys) {
        const claim = won(await b.claim(key, 60_000));
        expect(claim.key).toBe(key);
        claims.push(claim);
      }
      for (const claim of claims) expect(await b.complete(claim)).toBe(true);
      for (const key of keys) expect(await b.claim(key, 60_000)).toEqual({ status: "done" });
    });

    withBackend(
      "a 1,024-byte key is taken; a 1,025-byte one is refused and writes nothing",
      async (b) => {
        const base = freshKey("bytes");
        const longest = fillTo(`${base}:`, MAX_KEY_BYTES);
        expect(bytesOf(longest)).toBe(MAX_KEY_BYTES);
        // One byte over: the first is `longest` and one more byte, so a store that cut keys
        // at 1,024 bytes would have written `longest`; the second ends in a 2-byte character.
        const over = [`${longest}k`, `${fillTo(`${base}:`, MAX_KEY_BYTES - 1)}é`];
        for (const key of over) {
          expect(bytesOf(key)).toBe(MAX_KEY_BYTES + 1);
          await expect(b.claim(key, 60_000)).rejects.toMatchObject(refusedKey);
        }
        const claim = won(await b.claim(longest, 60_000));
        expect(claim.key).toBe(longest);
        expect(await b.claim(longest, 60_000)).toEqual({
          status: "held",
          leaseExpiresAt: claim.leaseExpiresAt,
        });
        expect(await b.complete(claim)).toBe(true);
        expect(await b.claim(longest, 60_000)).toEqual({ status: "done" });
      },
    );
  });

  describe("leases and ttls at their limits", () => {
    const badLeases: unknown[] = [
      0,
      -1,
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      MAX_LEASE_MS + 1,
      Number.MAX_SAFE_INTEGER,
      "60000",
      undefined,
      null,
    ];

    withBackend(
      "a lease that is not a whole number of ms from 1 to MAX_LEASE_MS is refused; nothing is written",
      async (b) => {
        const key = freshKey("bad-lease");
        for (const lease of badLeases) {
          await expect(b.claim(key, lease as number)).rejects.toMatchObject(refusedOption);
        }
        const claim = won(await b.claim(key, 60_000));
        if (b.renew) {
          for (const lease of badLeases) {
            await expect(b.renew(claim, lease as number)).rejects.toMatchObject(refusedOption);
          }
        }
        expect(await b.claim(key, 60_000)).toEqual({
          status: "held",
          leaseExpiresAt: claim.leaseExpiresAt,
        });
        expect(await b.complete(claim)).toBe(true);
      },
    );

    it(
      "the longest lease (MAX_LEASE_MS) under the longest ttl (MAX_TTL_MS) reads back",
      async () => {
        const b = await target.create({ ttlMs: MAX_TTL_MS });
        try {
          const key = freshKey("max");
          const claim = won(await b.claim(key, MAX_LEASE_MS));
          expect(Number.isSafeInteger(claim.fencingId)).toBe(true);
          expect(Number.isSafeInteger(claim.leaseExpiresAt)).toBe(true);
          expect(await b.claim(key, MAX_LEASE_MS)).toEqual({
            status: "held",
            leaseExpiresAt: claim.leaseExpiresAt,
          });
          if (b.renew) expect(await b.renew(claim, MAX_LEASE_MS)).toBe(true);
          expect((await b.claim(key, 1)).status).toBe("held");
          expect(await b.complete(claim)).toBe(true);
          expect(await b.claim(key, MAX_LEASE_MS)).toEqual({ status: "done" });
          expect(await b.complete(claim)).toBe(true); // a retried complete reads it back too

          // Released: the record (lease now, expiry in ten years) is read back and reclaimed.
          const other = freshKey("max-release");
          const first = won(await b.claim(other, MAX_LEASE_MS));
          await b.release(first);
          const second = won(await b.claim(other, MAX_LEASE_MS));
          expect(second.fencingId).toBe(first.fencingId + 2);
          expect(await b.complete(second)).toBe(true);
          expect(await b.claim(other, 1)).toEqual({ status: "done" });
        } finally {
          await b.close?.();
        }
      },
      DEFAULT_CASE_TIMEOUT_MS,
    );
  });
}

const silent = { info() {}, warn() {}, error() {} };

/** The sized short lease never goes past this (unless `leaseMs` itself does). */
const MAX_SIZED_LEASE_MS = 5_000;
/** The lease of the lease-end case: long enough that a lease ignored, or taken as seconds, shows. */
const LEASE_END_CASE_LEASE_MS = 60_000;
/**
 * How far a fresh win's lease end may stray from the clock readings taken just before and
 * just after the claim, plus the lease: a store that keeps whole seconds, and the skew
 * between this process's clock and the store's when the suite has to compare with
 * `Date.now()`. Far less than the lease, so a lease ending now, or at the ttl, fails.
 */
const LEASE_END_TOLERANCE_MS = 1_000;
/** A case that never waits out a lease (no `advance`) has this long. */
const DEFAULT_CASE_TIMEOUT_MS = 30_000;
/** A cold emulator's first writes take seconds on a busy machine. */
const WARM_UP_TIMEOUT_MS = 120_000;
/** The target's cleanup: dropping a hundred tables, or deleting a namespace's records. */
const CLEANUP_TIMEOUT_MS = 120_000;

function slackFor(leaseMs: number): number {
  return Math.max(20, Math.round(leaseMs / 3));
}
