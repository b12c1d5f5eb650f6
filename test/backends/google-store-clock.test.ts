// The bounds DatastoreLock and FirestoreLock keep on their store's time (store-clock.ts),
// against a simulated store: any offset from this process's wall clock (years either way),
// a wall clock that steps anywhere at any moment, a monotonic clock whose rate differs from
// the store's by up to MAX_DRIFT, answers stamped anywhere in their request's round trip.
// The bounds must always hold the store's true time, and be as narrow as the best round trip
// plus the drift allowed since.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_DRIFT, StoreClock } from "../../src/backends/google/store-clock.js";
import { storeMillis } from "../../src/backends/google/store-timestamp.js";

/** One request in the simulation: waits before it, its round trip, where the store stamped it. */
interface Request {
  idleMs: number;
  rttMs: number;
  /** Where in the round trip the store's time was taken, 0 (sent) to 1 (received). */
  at: number;
  kind: "read" | "write";
  /** How far a read's time may lie before the request left (a stale read), ms. */
  staleMs: number;
  /** Where the wall clock jumps to before this request, relative to true time (ms). */
  wallJumpMs: number | null;
  /** How long the machine is suspended before this request: the monotonic clock stands still. */
  suspendMs: number;
}

const request = fc.record({
  idleMs: fc.integer({ min: 0, max: 600_000 }),
  rttMs: fc.integer({ min: 0, max: 5_000 }),
  at: fc.double({ min: 0, max: 1, noNaN: true }),
  kind: fc.constantFrom<"read" | "write">("write", "read"),
  staleMs: fc.integer({ min: 0, max: 2_000 }),
  wallJumpMs: fc.option(fc.integer({ min: -86_400_000, max: 86_400_000 }), { nil: null }),
  suspendMs: fc.oneof(
    { weight: 4, arbitrary: fc.constant(0) },
    fc.integer({ min: 1, max: 3_600_000 }),
  ),
});

/**
 * A world in true time (ms): the store reads true time + `storeOffset`; the monotonic clock
 * runs at `rate` (within MAX_DRIFT of the store's) except while the machine is suspended; the
 * wall clock reads true time plus an offset that jumps when a request says so.
 */
class World {
  trueMs = 1_800_000_000_000;
  private wallOffset: number;
  private readonly monoStart: number;
  private suspended = 0;
  constructor(
    private readonly storeOffset: number,
    private readonly rate: number,
    wallOffset: number,
  ) {
    this.wallOffset = wallOffset;
    this.monoStart = this.trueMs;
  }
  store(at = this.trueMs): number {
    return at + this.storeOffset;
  }
  mono = (): number => (this.trueMs - this.monoStart - this.suspended) * this.rate;
  suspend(ms: number): void {
    this.trueMs += ms;
    this.suspended += ms;
  }
  wall = (): number => this.trueMs + this.wallOffset;
  jumpWall(to: number): void {
    this.wallOffset = to;
  }
}

/** Store offsets of ± 10 years, monotonic rates just inside the drift allowed. */
const world = fc.record({
  storeOffset: fc.integer({ min: -315_360_000_000, max: 315_360_000_000 }),
  // The monotonic clock's ms per store ms: within MAX_DRIFT, with a hair of room for rounding.
  rate: fc.double({
    min: 1 / (1 + MAX_DRIFT * 0.999),
    max: 1 / (1 - MAX_DRIFT * 0.999),
    noNaN: true,
  }),
  wallOffset: fc.integer({ min: -3_600_000, max: 3_600_000 }),
});

/** A commit the clock learned from: when its request left (true ms) and its round trip. */
interface Commit {
  sentAt: number;
  rttMs: number;
}

/** Run `requests`, calling `check` before and after each with the commits answered so far. */
function simulate(
  w: { storeOffset: number; rate: number; wallOffset: number },
  requests: Request[],
  check: (clock: StoreClock, world: World, commits: readonly Commit[]) => void,
): void {
  const sim = new World(w.storeOffset, w.rate, w.wallOffset);
  const clock = new StoreClock(sim.mono, sim.wall);
  const commits: Commit[] = [];
  for (const r of requests) {
    sim.trueMs += r.idleMs;
    sim.suspend(r.suspendMs);
    if (r.wallJumpMs !== null) sim.jumpWall(r.wallJumpMs);
    check(clock, sim, commits);
    const sent = clock.stamp();
    const sentAt = sim.trueMs;
    // A commit is stamped within its round trip; a read anywhere up to its answer.
    const stampedAt =
      r.kind === "write"
        ? sentAt + r.at * r.rttMs
        : sentAt - r.staleMs + r.at * (r.rttMs + r.staleMs);
    sim.trueMs += r.rttMs;
    // An answer without a time teaches nothing.
    expect(clock.learn(undefined, sent, r.kind)).toEqual(clock.now());
    const seconds = Math.floor(sim.store(stampedAt) / 1000);
    const nanos = Math.round((sim.store(stampedAt) - seconds * 1000) * 1e6);
    const after = clock.learn({ seconds, nanos }, sent, r.kind);
    // Right after an answer, the earliest holds whatever the kind (a read's latest may not).
    expect(after?.earliest).toBeLessThanOrEqual(sim.store());
    if (r.kind === "write") commits.push({ sentAt, rttMs: r.rttMs });
    check(clock, sim, commits);
  }
}

describe("StoreClock: bounds on the store's time", () => {
  it("the earliest never passes the store's time: any offset, wall steps, suspensions, drift", () => {
    fc.assert(
      fc.property(world, fc.array(request, { minLength: 1, maxLength: 30 }), (w, requests) => {
        simulate(w, requests, (clock, sim) => {
          const now = clock.now();
          if (now !== undefined) expect(now.earliest).toBeLessThanOrEqual(sim.store());
        });
      }),
      { numRuns: 500 },
    );
  });

  it("the latest never falls short of it while the wall clock keeps time over a suspension", () => {
    // The monotonic clock misses a suspension, and the wall clock catches up on resume: the
    // latest counts on that. A wall clock that steps is fine without a suspension.
    const steps = request.map((r) => ({ ...r, suspendMs: 0 }));
    const suspensions = request.map((r) => ({ ...r, wallJumpMs: null }));
    const requests = fc.oneof(
      fc.array(steps, { minLength: 1, maxLength: 30 }),
      fc.array(suspensions, { minLength: 1, maxLength: 30 }),
    );
    fc.assert(
      fc.property(world, requests, (w, sequence) => {
        simulate(w, sequence, (clock, sim) => {
          const now = clock.now();
          if (now !== undefined) expect(now.latest).toBeGreaterThanOrEqual(sim.store());
        });
      }),
      { numRuns: 500 },
    );
  });

  it("are as narrow as the best commit's round trip, plus the drift allowed since", () => {
    // A wall clock that steps forward widens the latest (by design), and so does a suspension
    // (the monotonic clock misses it, the earliest lags it); here neither happens.
    const steady = request.map((r) => ({ ...r, wallJumpMs: null, suspendMs: 0 }));
    fc.assert(
      fc.property(world, fc.array(steady, { minLength: 1, maxLength: 30 }), (w, requests) => {
        simulate(w, requests, (clock, sim, commits) => {
          const now = clock.now();
          if (now === undefined) return;
          // No wider than any one commit's bounds: its round trip, plus the drift allowed on
          // each side (either clock's rate off by MAX_DRIFT), plus the whole-ms rounding.
          const widest = Math.min(
            ...commits.map((c) => c.rttMs + 4 * MAX_DRIFT * (sim.trueMs - c.sentAt) + 2),
          );
          expect(now.latest - now.earliest).toBeLessThanOrEqual(widest);
        });
      }),
      { numRuns: 500 },
    );
  });

  it("know nothing until a commit answered; a read alone bounds from below only", () => {
    const sim = new World(-40_000, 1, 0);
    const clock = new StoreClock(sim.mono, sim.wall);
    expect(clock.now()).toBeUndefined();
    const sent = clock.stamp();
    sim.trueMs += 10;
    const read = clock.learn(new Date(sim.store() - 5), sent, "read");
    expect(read).toEqual({ earliest: sim.store() - 5, latest: sim.store() - 5 });
    expect(clock.now()).toBeUndefined();
    const write = clock.stamp();
    sim.trueMs += 10;
    clock.learn(new Date(sim.store() - 4), write, "write");
    expect(clock.now()).toEqual({ earliest: sim.store() - 4, latest: sim.store() + 7 });
  });

  it("start again from an answer the bounds deny (a store clock that stepped)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -86_400_000, max: 86_400_000 }).filter((step) => Math.abs(step) > 10),
        (step) => {
          const sim = new World(0, 1, 0);
          const clock = new StoreClock(sim.mono, sim.wall);
          const answer = (offset: number) => {
            const sent = clock.stamp();
            sim.trueMs += 5;
            clock.learn(new Date(sim.store() + offset - 2), sent, "write");
          };
          answer(0);
          sim.trueMs += 1_000;
          // The store's clock stepped by `step`: one commit later the bounds hold it again.
          answer(step);
          const now = clock.now();
          expect(now?.earliest).toBeLessThanOrEqual(sim.store() + step);
          expect(now?.latest).toBeGreaterThanOrEqual(sim.store() + step);
        },
      ),
    );
  });
});

describe("storeMillis: the stores' timestamps", () => {
  it("reads Firestore and protobuf timestamps to the sub-ms, and Dates", () => {
    expect(storeMillis({ seconds: 1_796_526_873, nanoseconds: 254_921_000 })).toBeCloseTo(
      1_796_526_873_254.921,
      3,
    );
    expect(storeMillis({ seconds: "1796526873", nanos: 1_500_000 })).toBeCloseTo(
      1_796_526_873_001.5,
      3,
    );
    expect(storeMillis(new Date(5))).toBe(5);
    for (const none of [undefined, null, "x", 3, {}, { seconds: "x" }]) {
      expect(storeMillis(none)).toBeUndefined();
    }
  });
});
