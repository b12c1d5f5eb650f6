// The model-based test of the transition table (test/support/model-run.ts) on InMemoryLock:
// with a fake clock, where no window is ever ambiguous, and with the real one.
import { describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/index.js";
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
