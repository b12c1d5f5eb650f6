// The contract suite removes what it made through the target's cleanup(): called once, after
// the last case and after every backend is closed, in the runner's afterAll; a runner without
// afterAll is refused when the target has cleanup. The SQL stores' tables are counted in
// test/backends/sql.contract.test.ts; node:test's `after` in node-test-runner.test.ts.
import { describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import type { LockBackend } from "../../src/core/port.js";
import {
  type BackendContractTarget,
  createFakeClock,
  describeBackendContract,
  type TestRunner,
} from "../../src/testing/index.js";

/** A runner that records the suite's cases and hooks, to run them here in order. */
function recordingRunner(withAfterAll = true) {
  const cases: Array<() => Promise<void>> = [];
  const before: Array<() => Promise<void>> = [];
  const after: Array<() => Promise<void>> = [];
  const runner: TestRunner = {
    describe: (_, body) => body(),
    it: (_, body) => void cases.push(() => body(undefined)),
    beforeAll: (body) => void before.push(body),
    ...(withAfterAll ? { afterAll: (body: () => Promise<void>) => void after.push(body) } : {}),
  };
  const runAll = async () => {
    for (const hook of before) await hook();
    for (const body of cases) await body();
    for (const hook of after) await hook();
  };
  return { runner, runAll, cases, after };
}

describe("the contract suite's cleanup", () => {
  it("runs once, after the last case, with every backend create() made closed", async () => {
    const clock = createFakeClock();
    const events: string[] = [];
    let open = 0;
    let made = 0;
    const target: BackendContractTarget = {
      name: "memory with cleanup",
      create: ({ ttlMs }) => {
        made += 1;
        open += 1;
        const backend: LockBackend = new InMemoryLock({ ttlMs, now: clock.now });
        const close = backend.close?.bind(backend);
        backend.close = async () => {
          open -= 1;
          await close?.();
        };
        return backend;
      },
      advance: clock.advance,
      cleanup: () => {
        events.push(`cleanup after ${made} creates, ${open} open`);
      },
    };
    const { runner, runAll, cases, after } = recordingRunner();
    describeBackendContract(target, runner);
    expect(after).toHaveLength(1);
    await runAll();
    expect(made).toBeGreaterThan(cases.length);
    expect(events).toEqual([`cleanup after ${made} creates, 0 open`]);
  });

  it("a target with cleanup and a runner without afterAll: a TypeError at registration, naming both", () => {
    const { runner, cases } = recordingRunner(false);
    expect(() =>
      describeBackendContract(
        { name: "memory", create: ({ ttlMs }) => new InMemoryLock({ ttlMs }), cleanup: () => {} },
        runner,
      ),
    ).toThrow(
      /^describeBackendContract: the target has cleanup\(\), and the runner has no afterAll to call it in: pass \{ describe, it, beforeAll, afterAll \}/,
    );
    expect(cases).toHaveLength(0);
  });

  it("a target without cleanup registers no afterAll", () => {
    const { runner, after } = recordingRunner();
    describeBackendContract(
      { name: "memory", create: ({ ttlMs }) => new InMemoryLock({ ttlMs }) },
      runner,
    );
    expect(after).toHaveLength(0);
  });
});
