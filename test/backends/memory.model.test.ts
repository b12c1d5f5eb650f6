// The model-based test of the transition table (test/support/model-run.ts) on InMemoryLock:
// with a fake clock, where no window is ever ambiguous, and with the real one.
import { describe, expect, it } from "vitest";
import { type Claim, InMemoryLock, type LockBackend } from "../../src/index.js";
import { createFakeClock } from "../../src/testing/index.js";
import {
  checkAgainstTable,
  modelRunOptionsFromEnv,
  showReport,
  sizeLease,
} from "../support/model-run.js";

const options = modelRunOptionsFromEnv();

describe("InMemoryLock against the transition table", () => {
  it("with a fake clock: every answer is the table's, never ambiguous", async () => {
    const clock = createFakeClock(1_000_000);
    const leaseMs = 40;
    const report = await checkAgainstTable(
      {
        name: "memory (fake clock)",
        backend: new InMemoryLock({ ttlMs: leaseMs / 2, now: clock.now }),
        leaseMs,
        ttlMs: leaseMs / 2,
        clock,
      },
      options,
    );
    console.info(showReport(report));
    // A clock that stands still during a call leaves nothing to the tolerance window.
    expect(report.ambiguous).toBe(0);
  }, 120_000);

  it("with a fake clock that moves while a call runs: windows of several ms, every answer allowed is the table's", async () => {
    // The store judges each call at a random moment between its start and its answer, as a
    // real store does; here the moments are many and the windows wide, so the model's
    // tolerance is exercised far more often than on a real store, and deterministically fast.
    const clock = createFakeClock(1_000_000);
    const leaseMs = 40;
    const inner = new InMemoryLock({ ttlMs: leaseMs / 2, now: clock.now });
    const drift = () => clock.advance(Math.floor(Math.random() * 11));
    const slow =
      <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        drift();
        const answer = await call(...args);
        drift();
        return answer;
      };
    const backend: LockBackend = {
      claim: slow((key: string, ms: number) => inner.claim(key, ms)),
      complete: slow((claim: Claim) => inner.complete(claim)),
      release: slow((claim: Claim) => inner.release(claim)),
      renew: slow((claim: Claim, ms: number) => inner.renew(claim, ms)),
    };
    const report = await checkAgainstTable(
      { name: "memory (fake clock, slow calls)", backend, leaseMs, ttlMs: leaseMs / 2, clock },
      { ...options, numRuns: Math.max(5_000, options.numRuns ?? 0) },
    );
    console.info(showReport(report));
    expect(report.offEstimate).toBeGreaterThan(0);
  }, 120_000);

  it("with the real clock and short leases", async () => {
    const { leaseMs } = await sizeLease(new InMemoryLock(), { minLeaseMs: 20 });
    const ttlMs = Math.ceil(leaseMs / 2);
    const report = await checkAgainstTable(
      {
        name: "memory (real clock)",
        backend: new InMemoryLock({ ttlMs }),
        leaseMs,
        ttlMs,
        clock: "client",
      },
      options,
    );
    console.info(showReport(report));
  }, 600_000);
});
