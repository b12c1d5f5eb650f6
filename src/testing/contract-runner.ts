// The test runner the contract suite registers its cases with: vitest's and jest's as they
// are, node:test's through nodeTestRunner, or the globals.
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
export function globalRunner(): TestRunner | undefined {
  const { describe, it, beforeAll, afterAll } = globalThis as Record<string, unknown>;
  if (typeof describe !== "function" || typeof it !== "function") return undefined;
  if (typeof beforeAll !== "function") return undefined;
  return (
    typeof afterAll === "function"
      ? { describe, it, beforeAll, afterAll }
      : { describe, it, beforeAll }
  ) as TestRunner;
}
