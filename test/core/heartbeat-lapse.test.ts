// The heartbeat's lapse watch: a body whose lease no renewal vouches for any more (its store
// does not answer, or the process was paused past the lease) has its signal aborted when the
// lease runs out in the instance's own clock, without waiting for an answer that may never
// come. Fake timers and clock: the lease is judged against Date.now, as the heartbeat does.
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { type Claim, InMemoryLock, type LockBackend, lock } from "../../src/index.js";
import { captureLogger } from "../support/logger.js";

const LEASE_MS = 100;

beforeAll(async () => {
  // The first lock() loads what it loads (telemetry) on the real event loop: before the fakes.
  await lock("warm-up", { backend: new InMemoryLock() }, () => undefined);
});
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** An in-memory store whose renewals do as `renewal` says: answer, hang or fail. */
function storeWhoseRenewals(renewal: "answer" | "hang" | "fail"): LockBackend {
  const memory = new InMemoryLock({ now: () => Date.now() });
  return {
    claim: (key, leaseMs) => memory.claim(key, leaseMs),
    complete: (claim: Claim) => memory.complete(claim),
    release: (claim: Claim) => memory.release(claim),
    renew: (claim: Claim, leaseMs: number) => {
      if (renewal === "hang") return new Promise<boolean>(() => {});
      if (renewal === "fail") return Promise.reject(new Error("ECONNRESET"));
      return memory.renew(claim, leaseMs);
    },
  };
}

/** Run a body that waits `holdMs` and reports when (if ever) its signal aborted. */
async function hold(backend: LockBackend, holdMs: number) {
  const logger = captureLogger();
  const started = Date.now();
  let abortedAfter: number | undefined;
  let reason: unknown;
  const run = lock("k", { backend, leaseMs: LEASE_MS, heartbeat: true, logger }, (_c, signal) => {
    signal.addEventListener("abort", () => {
      abortedAfter = Date.now() - started;
      reason = signal.reason;
    });
    return new Promise<void>((resolve) => setTimeout(resolve, holdMs));
  }).catch(() => undefined);
  await vi.advanceTimersByTimeAsync(holdMs + 1);
  await run;
  return { abortedAfter, reason, logger };
}

describe("heartbeat lapse watch", () => {
  it("aborts the signal when the lease runs out and renewals never answer", async () => {
    const { abortedAfter, reason, logger } = await hold(storeWhoseRenewals("hang"), 5 * LEASE_MS);
    expect(abortedAfter).toBe(LEASE_MS);
    expect(String(reason)).toMatch(/lease on k lapsed: no renewal confirmed it within 100 ms/);
    expect(logger.at("ERROR").map((l) => l.fields.outcome)).toEqual(["lease_lapsed"]);
  });

  it("aborts the signal when the lease runs out and every renewal fails", async () => {
    const { abortedAfter, logger } = await hold(storeWhoseRenewals("fail"), 5 * LEASE_MS);
    expect(abortedAfter).toBe(LEASE_MS);
    expect(logger.at("WARNING").some((l) => l.fields.outcome === "renew_failed")).toBe(true);
  });

  it("does not abort while renewals answer (the control: the same hold, a store that renews)", async () => {
    const { abortedAfter, logger } = await hold(storeWhoseRenewals("answer"), 5 * LEASE_MS);
    expect(abortedAfter).toBeUndefined();
    expect(logger.lines).toEqual([]);
  });

  it("aborts the signal once maxHoldMs stopped the renewals and the last lease ran out", async () => {
    const memory = new InMemoryLock({ now: () => Date.now() });
    const logger = captureLogger();
    let abortedAfter: number | undefined;
    const started = Date.now();
    const options = {
      backend: memory,
      leaseMs: LEASE_MS,
      heartbeat: { everyMs: 30, maxHoldMs: 100 },
      logger,
    };
    const run = lock("k", options, (_c, signal) => {
      signal.addEventListener("abort", () => {
        abortedAfter = Date.now() - started;
      });
      return new Promise<void>((resolve) => setTimeout(resolve, 500));
    }).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(501);
    await run;
    // Renewals at 30, 60 and 90 ms; the one due at 120 ms finds maxHoldMs passed.
    expect(abortedAfter).toBe(90 + LEASE_MS);
    expect(logger.lines.map((l) => l.fields.outcome)).toEqual([
      "heartbeat_stopped",
      "lease_lapsed",
    ]);
  });

  it("renews every everyMs from when the last renewal left, so slow answers do not lapse the lease", async () => {
    // Each renewal answers after 45 ms of a 100 ms lease (renewals every 33 ms). Scheduled from
    // the answers, the second would leave at 111 ms and answer after the lease its
    // predecessor confirmed (133 ms): the watch would abort a body whose lease never lapsed.
    const memory = new InMemoryLock({ now: () => Date.now() });
    const slowRenewals: LockBackend = {
      claim: (key, leaseMs) => memory.claim(key, leaseMs),
      complete: (claim) => memory.complete(claim),
      release: (claim) => memory.release(claim),
      renew: (claim, leaseMs) =>
        new Promise((resolve) => setTimeout(() => resolve(memory.renew(claim, leaseMs)), 45)),
    };
    const { abortedAfter, logger } = await hold(slowRenewals, 10 * LEASE_MS);
    expect(abortedAfter).toBeUndefined();
    expect(logger.lines).toEqual([]);
  });

  it("counts the lease from when the claim left, not from its answer", async () => {
    const memory = new InMemoryLock({ now: () => Date.now() });
    // A claim whose answer takes 60 ms of a 100 ms lease: 40 ms are left when the body starts.
    const slow: LockBackend = {
      claim: (key, leaseMs) =>
        new Promise((resolve) => setTimeout(() => resolve(memory.claim(key, leaseMs)), 60)),
      complete: (claim) => memory.complete(claim),
      release: (claim) => memory.release(claim),
      renew: () => new Promise<boolean>(() => {}),
    };
    let abortedAt: number | undefined;
    const started = Date.now();
    const run = lock(
      "k",
      { backend: slow, leaseMs: LEASE_MS, heartbeat: true, logger: captureLogger() },
      (_c, signal) => {
        signal.addEventListener("abort", () => {
          abortedAt = Date.now() - started;
        });
        return new Promise<void>((resolve) => setTimeout(resolve, 300));
      },
    ).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(400);
    await run;
    expect(abortedAt).toBe(LEASE_MS);
  });
});
