/**
 * Everything in `gcp-pubsub-idempotency/testing`, with a {@link describeBackendContract} that
 * registers the contract suite with vitest. Needs vitest (an optional peer dependency); the
 * plain `/testing` subpath loads without it.
 *
 * @module gcp-pubsub-idempotency/testing/vitest
 */
import { afterAll, beforeAll, describe, it, type TestContext } from "vitest";
import { describeBackendContract as describeWithRunner } from "./contract.js";
import type { TestRunner } from "./contract-runner.js";
import type { BackendContractTarget } from "./contract-target.js";

export * from "./index.js";

/**
 * vitest's `describe`, `it`, `beforeAll` and `afterAll`, as a {@link TestRunner}; a case that does not
 * apply to the backend (an optional method it lacks) is skipped with the test context's
 * `skip`, its reason as the note.
 *
 * @example
 * ```ts
 * import { InMemoryLock } from "gcp-pubsub-idempotency";
 * import { describeBackendContract } from "gcp-pubsub-idempotency/testing";
 * import { vitestRunner } from "gcp-pubsub-idempotency/testing/vitest";
 *
 * describeBackendContract(
 *   { name: "memory", create: ({ ttlMs }) => new InMemoryLock({ ttlMs }) },
 *   vitestRunner,
 * );
 * ```
 */
export const vitestRunner: TestRunner = {
  describe,
  it,
  beforeAll,
  afterAll,
  skip: (context, reason) => (context as TestContext).skip(reason),
};

/**
 * Register the backend contract suite with vitest: `describeBackendContract` from
 * `gcp-pubsub-idempotency/testing` with {@link vitestRunner} as the runner. Call it at the top
 * level of a vitest test file.
 *
 * @example
 * ```ts
 * import { InMemoryLock } from "gcp-pubsub-idempotency";
 * import { createFakeClock, describeBackendContract } from "gcp-pubsub-idempotency/testing/vitest";
 *
 * const clock = createFakeClock();
 * describeBackendContract({
 *   name: "InMemoryLock (fake clock)",
 *   create: ({ ttlMs }) => new InMemoryLock({ ttlMs, now: clock.now }),
 *   advance: clock.advance,
 * });
 * ```
 */
export function describeBackendContract<Tx>(target: BackendContractTarget<Tx>): void {
  describeWithRunner(target, vitestRunner);
}
