// What DatastoreLock and FirestoreLock must both do beyond the contract, written once and run
// on each emulator by datastore.test.ts and firestore.test.ts: the hostile keys, a client made
// lazily from the emulator variable, 32 claims racing from two client instances, a write whose
// response was lost, a write slower than its lease, and the RPCs each verb costs.
import { beforeAll, expect, it } from "vitest";
import { InProgress } from "../../src/core/errors.js";
import type { Claim, LockBackend } from "../../src/core/port.js";
import { lock } from "../../src/core/verbs/lock.js";
import { warmUpBackend } from "../../src/testing/index.js";
import { won } from "../support/claims.js";
import { silentLogger } from "../support/logger.js";
import { describeGoogleRecordCases } from "./google-record-cases.js";
import { describeHostileKeys } from "./hostile-keys.js";

/** Runs one write RPC (Datastore insert or commit, Firestore create or update) for a test. */
export type AroundWrite = <T>(write: () => Promise<T>) => Promise<T>;

/** How a test watches or disturbs a backend's client. */
export interface Instrument {
  /** Counts each RPC the backend sends, by name. */
  calls?: Map<string, number>;
  /** Every write goes through it. */
  around?: AroundWrite;
}

/** The RPCs each verb costs, per outcome. */
export interface RoundTrips {
  /**
   * A new lock's first claim of an absent key: it learns the store's time first (Datastore:
   * an empty transaction; Firestore: the read of the reclaim path).
   */
  firstClaimWon: number;
  claimWon: number;
  claimHeld: number;
  renew: number;
  complete: number;
  claimDone: number;
  release: number;
  reclaim: number;
}

/** Both backends renew leases. */
type RenewingBackend = LockBackend & Pick<Required<LockBackend>, "renew">;

export interface GoogleLockFixture {
  /** Names the suites: "DatastoreLock (emulator)", … */
  name: string;
  /** Names the log lines: "datastore" or "firestore". */
  label: string;
  /** The variable a client made without options reads: DATASTORE_EMULATOR_HOST, … */
  emulatorVariable: string;
  /** A namespace or collection no other test uses. */
  freshScope(): string;
  /**
   * A backend in `scope` on the file's shared client, watched or disturbed by `instrument`,
   * with `ttlMs` when given.
   */
  backend(scope: string, instrument?: Instrument, ttlMs?: number): RenewingBackend;
  /** A backend that makes its own client (from the emulator variable) on its first call. */
  lazyBackend(scope: string): LockBackend & { close(): Promise<void> };
  /** A backend on a client instance of its own. */
  separateBackend(scope: string): LockBackend;
  /** How many claims race on the reclaim path. */
  reclaimRacers: number;
  raceTimeoutMs: number;
  /** Runs of the hostile-keys property; default 30. */
  hostileKeyRuns?: number;
  roundTrips: RoundTrips;
  /** What the backend's `supports.maxResultBytes` must say. */
  maxResultBytes: number;
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** Fresh namespace or collection names, unique to this run: the emulator may outlive a run. */
export function runScopedNames(): () => string {
  const run = `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
  let counter = 0;
  return () => `${run}-${counter++}`;
}

/**
 * Opens the channel and warms the emulator's write path (seconds on a busy machine) before the
 * short leases that a claim slower than its lease would rightly answer held. Resolves to a
 * lease to let lapse on purpose: ten times the slowest call measured after the warm-up, so no
 * claim that must win outlasts it.
 */
export async function warmUpOnEmulator(label: string, backend: LockBackend): Promise<number> {
  const { coldMs, slowestMs } = await warmUpBackend(backend);
  const shortLeaseMs = Math.max(300, 10 * slowestMs);
  console.info(
    `[${label}] warm-up ${coldMs} ms, slowest call after it ${slowestMs} ms: ` +
      `short lease ${shortLeaseMs} ms`,
  );
  return shortLeaseMs;
}

/** Writes land, but while `state.failures` > 0 each response is lost (gRPC 14 UNAVAILABLE). */
function losingResponses(state: { failures: number }): AroundWrite {
  return async (write) => {
    const result = await write();
    if (state.failures > 0) {
      state.failures -= 1;
      throw Object.assign(new Error("14 UNAVAILABLE: simulated lost write response"), {
        code: 14,
      });
    }
    return result;
  };
}

/**
 * Registers the shared cases in the current describe block, with a warm-up that runs before
 * every test of that block (the backend-specific ones included).
 */
export function describeGoogleLockCases(f: GoogleLockFixture): void {
  let shortLeaseMs = 0;
  beforeAll(async () => {
    shortLeaseMs = await warmUpOnEmulator(f.label, f.backend(f.freshScope()));
  }, 120_000);

  describeHostileKeys(f.name, async () => f.backend(f.freshScope()), f.hostileKeyRuns ?? 30);
  describeGoogleRecordCases(f, () => shortLeaseMs);

  it(`creates its own client lazily from ${f.emulatorVariable}`, async () => {
    const backend = f.lazyBackend(f.freshScope());
    const claim = won(await backend.claim("lazy", 60_000));
    expect(await backend.complete(claim!)).toBe(true);
    expect(await backend.claim("lazy", 60_000)).toEqual({ status: "done" });
    await backend.close();
  });

  it(
    "two client instances, 32 concurrent claims on one key: exactly one wins",
    async () => {
      const scope = f.freshScope();
      const a = f.separateBackend(scope);
      const b = f.separateBackend(scope);
      const race = async (key: string, n: number) => {
        const outcomes = await Promise.all(
          Array.from({ length: n }, (_, i) => (i % 2 === 0 ? a : b).claim(key, 60_000)),
        );
        expect(outcomes.filter((o) => o.status === "won")).toHaveLength(1);
        expect(outcomes.filter((o) => o.status === "held")).toHaveLength(n - 1);
        return outcomes;
      };
      await race("contended", 32);
      // The reclaim path races too: a lapsed lease, then several claims at once.
      const first = won(await a.claim("contended-reclaim", shortLeaseMs));
      await sleep(shortLeaseMs + 100);
      const winner = (await race("contended-reclaim", f.reclaimRacers)).find(
        (o) => o.status === "won",
      );
      expect(winner?.status === "won" && winner.claim.fencingId).toBe(first.fencingId + 1);
    },
    f.raceTimeoutMs,
  );

  it("a holder whose key another instance reclaimed cannot renew, complete or release", async () => {
    // Each instance remembers only its own writes: the reclaim happened elsewhere, so the
    // lapsed holder's next writes must be refused by the store, not by anything it remembers.
    const scope = f.freshScope();
    const a = f.separateBackend(scope) as RenewingBackend;
    const b = f.separateBackend(scope);
    for (const verb of ["renew", "complete", "release"] as const) {
      const key = `reclaimed-elsewhere-${verb}`;
      const lapsed = won(await a.claim(key, shortLeaseMs));
      await sleep(shortLeaseMs + 100);
      const reclaim = won(await b.claim(key, 60_000));
      expect(reclaim.fencingId).toBe(lapsed.fencingId + 1);
      if (verb === "renew") expect(await a.renew(lapsed, 60_000)).toBe(false);
      if (verb === "complete") expect(await a.complete(lapsed)).toBe(false);
      if (verb === "release") await a.release(lapsed);
      // The reclaimer still holds the key, and completes it.
      expect(await b.claim(key, 60_000)).toMatchObject({ status: "held" });
      expect(await b.complete(reclaim)).toBe(true);
    }
  });

  it("a claim whose write landed but whose response was lost reaffirms its own win", async () => {
    const scope = f.freshScope();
    const state = { failures: 0 };
    const backend = f.backend(scope, { around: losingResponses(state) });
    const observer = f.backend(scope);
    let runs = 0;
    state.failures = 1;
    await lock("lost", { backend, leaseMs: 60_000, logger: silentLogger }, (claim) => {
      // The first fence of a new record (clockFence: whole ms × 1000), not a reclaim's + 1.
      expect(claim.fencingId % 1000).toBe(0);
      runs++;
    });
    expect(runs).toBe(1);
    expect(state.failures).toBe(0);
    expect(await observer.claim("lost", 60_000)).toEqual({ status: "done" });

    // The reclaim path: a lapsed lease, then a reclaim whose write response is lost.
    const first = won(await observer.claim("lost-reclaim", shortLeaseMs));
    await sleep(shortLeaseMs + 100);
    state.failures = 1;
    let reruns = 0;
    const options = { backend, leaseMs: 60_000, logger: silentLogger };
    await lock("lost-reclaim", options, async (claim) => {
      expect(claim.fencingId).toBe(first.fencingId + 1);
      expect(state.failures).toBe(0);
      expect(await observer.claim("lost-reclaim", 60_000)).toEqual({
        status: "held",
        leaseExpiresAt: claim.leaseExpiresAt,
      });
      reruns++;
      state.failures = 1; // and the complete's response is lost too
    });
    expect(reruns).toBe(1);
    expect(state.failures).toBe(0);
    expect(await observer.claim("lost-reclaim", 60_000)).toEqual({ status: "done" });
  });

  it("a win whose write outlasted its lease is not handed to a body; the next claim reclaims", async () => {
    const scope = f.freshScope();
    // Every write lands only after 300 ms, as behind the emulator's lock timeouts.
    const backend = f.backend(scope, {
      around: async (write) => {
        await sleep(300);
        return write();
      },
    });
    const observer = f.backend(scope);
    let runs = 0;
    const late = lock("late", { backend, leaseMs: 100, logger: silentLogger }, () => {
      runs++;
    });
    await expect(late).rejects.toBeInstanceOf(InProgress);
    expect(runs).toBe(0);
    // The late write landed (a new record's first fence, whole ms × 1000): this reclaims it.
    expect(won(await observer.claim("late", 60_000)).fencingId % 1000).toBe(1);
    // A lease longer than the write still wins through the same slow client.
    expect(won(await backend.claim("in-time", 5_000)).fencingId % 1000).toBe(0);
  });

  it("round trips per verb", async () => {
    const calls = new Map<string, number>();
    const backend = f.backend(f.freshScope(), { calls });
    const measure = async (label: string, fn: () => Promise<unknown>) => {
      calls.clear();
      await fn();
      const total = [...calls.values()].reduce((x, y) => x + y, 0);
      console.info(
        `[${f.label}] ${label}: ${total} RPCs ${JSON.stringify(Object.fromEntries(calls))}`,
      );
      return total;
    };
    const expected = f.roundTrips;
    let claim: Claim | undefined;
    expect(
      await measure("first claim of a new lock (absent → won)", () => backend.claim("rt0", 60_000)),
    ).toBe(expected.firstClaimWon);
    expect(
      await measure("claim (absent → won)", async () => {
        claim = won(await backend.claim("rt", 60_000));
      }),
    ).toBe(expected.claimWon);
    expect(await measure("claim (held)", () => backend.claim("rt", 60_000))).toBe(
      expected.claimHeld,
    );
    expect(await measure("renew", () => backend.renew(claim!, 60_000))).toBe(expected.renew);
    expect(await measure("complete", () => backend.complete(claim!))).toBe(expected.complete);
    expect(await measure("claim (done)", () => backend.claim("rt", 60_000))).toBe(
      expected.claimDone,
    );
    const other = won(await backend.claim("rt2", 60_000));
    expect(await measure("release", () => backend.release(other))).toBe(expected.release);
    expect(await measure("claim (reclaim)", () => backend.claim("rt2", 60_000))).toBe(
      expected.reclaim,
    );
  });
}
