// The transition table as pure functions: one example per row of docs/state-machine.md, and
// the invariants every single step keeps, over arbitrary records, times and calls.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  claimTransition,
  clockFence,
  completeTransition,
  forceReleaseTransition,
  inspectTransition,
  type LockRecord,
  purgeTransition,
  releaseTransition,
  renewTransition,
  type TransitionRow,
  unlessLapsed,
} from "../../src/core/transitions.js";

const NOW = 1_000_000;
/** The first fence the store picks for a new record (its clock or a sequence). */
const FIRST = 7_000;
const TTL = 500;
const LEASE = 100;
const KEY = "orders:42";

const claimed: LockRecord = {
  state: "claimed",
  fencingId: 3,
  leaseExpiresAt: NOW + 50,
  expiresAt: NOW + 50 + TTL,
  token: "theirs",
};
const lapsed: LockRecord = { ...claimed, leaseExpiresAt: NOW - 1, expiresAt: NOW - 1 + TTL };
const done: LockRecord = { ...claimed, state: "done", expiresAt: NOW + 1 };
const doneExpired: LockRecord = { ...done, expiresAt: NOW };

const claimCall = { key: KEY, leaseMs: LEASE, ttlMs: TTL, token: "mine" };
const fenced = (fencingId: number) => ({ claim: { key: KEY, fencingId }, ttlMs: TTL });

describe("claim rows", () => {
  const won = (fencingId: number) => ({
    answer: { status: "won", claim: { key: KEY, fencingId, leaseExpiresAt: NOW + LEASE } },
    write: {
      state: "claimed",
      fencingId,
      leaseExpiresAt: NOW + LEASE,
      expiresAt: NOW + LEASE + TTL,
      token: "mine",
    },
  });

  it.each<[string, LockRecord | undefined, TransitionRow, object]>([
    ["an absent key is won at the store's first fence", undefined, "claim.absent", won(FIRST)],
    [
      "a live lease answers held until it ends",
      claimed,
      "claim.held",
      { answer: { status: "held", leaseExpiresAt: NOW + 50 } },
    ],
    ["a lapsed lease is reclaimed at fence + 1", lapsed, "claim.lapsed", won(4)],
    ["a done key within its ttl answers done", done, "claim.done", { answer: { status: "done" } }],
    ["a done key past its ttl is won again at fence + 1", doneExpired, "claim.expired", won(4)],
    [
      "a record bearing this call's token is its own landed win, written again by nobody",
      { ...lapsed, token: "mine" },
      "claim.own",
      {
        answer: {
          status: "won",
          claim: { key: KEY, fencingId: 3, leaseExpiresAt: lapsed.leaseExpiresAt },
        },
      },
    ],
  ])("%s", (_, record, row, expected) => {
    const transition = claimTransition(record, NOW, claimCall, FIRST);
    expect({ ...transition }).toEqual({ row, ...expected });
  });

  it("the lease boundary: at exactly leaseExpiresAt the lease has lapsed", () => {
    expect(claimTransition(claimed, claimed.leaseExpiresAt - 1, claimCall, FIRST).row).toBe(
      "claim.held",
    );
    expect(claimTransition(claimed, claimed.leaseExpiresAt, claimCall, FIRST).row).toBe(
      "claim.lapsed",
    );
  });

  it("a record past expiresAt but not yet deleted is reclaimed at fence + 1", () => {
    const stale = { ...lapsed, expiresAt: NOW - 1 };
    expect(claimTransition(stale, NOW, claimCall, FIRST).write?.fencingId).toBe(4);
  });

  it("without a token (InMemoryLock) no record counts as the call's own", () => {
    const call = { key: KEY, leaseMs: LEASE, ttlMs: TTL };
    expect(claimTransition({ ...claimed, token: undefined }, NOW, call, FIRST).row).toBe(
      "claim.held",
    );
  });

  it("clockFence: a whole-ms clock read in µs, above every fence of a record living ≥ 1 ms", () => {
    expect(clockFence(NOW)).toBe(NOW * 1000);
    // 999 claims and releases in the one ms a record lives stay below the next record's fence.
    expect(clockFence(NOW) + 999).toBeLessThan(clockFence(NOW + 1));
    expect(Number.isSafeInteger(clockFence(Date.parse("2200-01-01")))).toBe(true);
  });
});

describe("complete, release and renew rows", () => {
  it.each<[string, () => { row: TransitionRow; answer: unknown; write?: unknown }, object]>([
    [
      "complete of a claimed record with its fence: done for the ttl from now",
      () => completeTransition(claimed, NOW, fenced(3)),
      {
        row: "complete.claimed",
        answer: true,
        write: { ...claimed, state: "done", expiresAt: NOW + TTL },
      },
    ],
    [
      "complete of a lapsed lease still lands (no lease guard)",
      () => completeTransition(lapsed, NOW, fenced(3)),
      {
        row: "complete.claimed",
        answer: true,
        write: { ...lapsed, state: "done", expiresAt: NOW + TTL },
      },
    ],
    [
      "a retried complete finds it done and says true, writing nothing",
      () => completeTransition(done, NOW, fenced(3)),
      { row: "complete.retried", answer: true },
    ],
    [
      "complete with a stale fence",
      () => completeTransition(claimed, NOW, fenced(2)),
      { row: "complete.fenced", answer: false },
    ],
    [
      "complete of an absent key",
      () => completeTransition(undefined, NOW, fenced(3)),
      { row: "complete.fenced", answer: false },
    ],
    [
      "release with the fence: the lease ends now and the fence rises",
      () => releaseTransition(claimed, NOW, fenced(3)),
      {
        row: "release.claimed",
        answer: undefined,
        write: { ...claimed, fencingId: 4, leaseExpiresAt: NOW, expiresAt: NOW + TTL },
      },
    ],
    [
      "release of a done record, even with its fence, changes nothing",
      () => releaseTransition(done, NOW, fenced(3)),
      { row: "release.fenced", answer: undefined },
    ],
    [
      "release with a stale fence",
      () => releaseTransition(claimed, NOW, fenced(4)),
      { row: "release.fenced", answer: undefined },
    ],
    [
      "renew with the fence: the lease runs from now, the record lives ttl past it",
      () => renewTransition(lapsed, NOW, { ...fenced(3), leaseMs: LEASE }),
      {
        row: "renew.claimed",
        answer: true,
        write: { ...lapsed, leaseExpiresAt: NOW + LEASE, expiresAt: NOW + LEASE + TTL },
      },
    ],
    [
      "renew of a done record",
      () => renewTransition(done, NOW, { ...fenced(3), leaseMs: LEASE }),
      { row: "renew.fenced", answer: false },
    ],
    [
      "renew with a stale fence",
      () => renewTransition(claimed, NOW, { ...fenced(2), leaseMs: LEASE }),
      { row: "renew.fenced", answer: false },
    ],
  ])("%s", (_, transition, expected) => {
    expect({ ...transition() }).toEqual(expected);
  });

  it("a record past expiresAt answers every fenced call as if absent", () => {
    const expired = { ...claimed, expiresAt: NOW };
    expect(completeTransition(expired, NOW, fenced(3)).row).toBe("complete.fenced");
    expect(releaseTransition(expired, NOW, fenced(3)).row).toBe("release.fenced");
    expect(renewTransition(expired, NOW, { ...fenced(3), leaseMs: LEASE }).row).toBe(
      "renew.fenced",
    );
  });
});

describe("purge rows", () => {
  it("deletes a record from its expiresAt on, keeps it before, and has nothing to do for none", () => {
    expect({ ...purgeTransition(done, NOW) }).toEqual({ row: "purge.kept", answer: false });
    expect({ ...purgeTransition(doneExpired, NOW) }).toEqual({
      row: "purge.expired",
      answer: true,
      write: "delete",
    });
    expect(purgeTransition(undefined, NOW).row).toBe("purge.kept");
  });
});

describe("operator rows: inspect and forceRelease", () => {
  const force = (fencingId: number) => ({ fencingId, ttlMs: TTL });

  it("inspect returns the record as stored with the time, or nothing, and writes nothing", () => {
    expect({ ...inspectTransition(claimed, NOW, KEY) }).toEqual({
      row: "inspect.found",
      answer: {
        key: KEY,
        state: "claimed",
        fencingId: 3,
        leaseExpiresAt: claimed.leaseExpiresAt,
        expiresAt: claimed.expiresAt,
        now: NOW,
      },
    });
    expect(inspectTransition(doneExpired, NOW, KEY).answer?.state).toBe("done");
    expect({ ...inspectTransition(undefined, NOW, KEY) }).toEqual({
      row: "inspect.absent",
      answer: undefined,
    });
  });

  it.each<[string, LockRecord | undefined, number, TransitionRow, object]>([
    [
      "a held claim at the operator's fence: lease ends now, fence + 1",
      claimed,
      3,
      "forceRelease.claimed",
      {
        answer: { status: "released", fencingId: 4 },
        write: { ...claimed, fencingId: 4, leaseExpiresAt: NOW, expiresAt: NOW + TTL },
      },
    ],
    [
      "a lapsed claim is freed the same way",
      lapsed,
      3,
      "forceRelease.claimed",
      {
        answer: { status: "released", fencingId: 4 },
        write: { ...lapsed, fencingId: 4, leaseExpiresAt: NOW, expiresAt: NOW + TTL },
      },
    ],
    [
      "a claim whose fence moved on is left alone",
      claimed,
      2,
      "forceRelease.changed",
      { answer: { status: "changed", fencingId: 3 } },
    ],
    [
      "a done record is never touched",
      done,
      3,
      "forceRelease.done",
      { answer: { status: "done" } },
    ],
    ["no record", undefined, 1, "forceRelease.absent", { answer: { status: "absent" } }],
    [
      "a record past its expiry counts as absent",
      { ...claimed, expiresAt: NOW },
      3,
      "forceRelease.absent",
      { answer: { status: "absent" } },
    ],
  ])("forceRelease: %s", (_, record, fencingId, row, expected) => {
    expect({ ...forceReleaseTransition(record, NOW, force(fencingId)) }).toEqual({
      row,
      ...expected,
    });
  });
});

describe("unlessLapsed (process-clock backends)", () => {
  const win = claimTransition(undefined, NOW, claimCall, FIRST).answer;
  it("hands a win on while its lease runs", () => {
    expect(unlessLapsed(win, NOW + LEASE - 1)).toBe(win);
  });
  it("answers held for a win whose lease ran out before the write returned", () => {
    expect(unlessLapsed(win, NOW + LEASE)).toEqual({
      status: "held",
      leaseExpiresAt: NOW + LEASE,
    });
  });
  it("leaves done and held answers alone", () => {
    const held = { status: "held", leaseExpiresAt: NOW } as const;
    expect(unlessLapsed(held, NOW + 10)).toBe(held);
    expect(unlessLapsed({ status: "done" }, NOW)).toEqual({ status: "done" });
  });
});

describe("every step keeps the table's invariants", () => {
  const time = fc.integer({ min: 0, max: 2_000 });
  // A stored record as the table can leave it: a claimed one expires no sooner than its lease
  // ends; a done one's lease no longer matters.
  const record: fc.Arbitrary<LockRecord | undefined> = fc.option(
    fc
      .record({
        state: fc.constantFrom<"claimed" | "done">("claimed", "done"),
        fencingId: fc.integer({ min: 1, max: 5 }),
        leaseExpiresAt: time,
        extra: fc.integer({ min: -1_000, max: 1_000 }),
        token: fc.constantFrom("a", "b"),
      })
      .map(({ extra, ...r }) => ({
        ...r,
        expiresAt: r.leaseExpiresAt + (r.state === "claimed" ? Math.abs(extra) : extra),
      })),
    { nil: undefined },
  );
  const call = fc.record({
    kind: fc.constantFrom("claim", "complete", "release", "renew", "purge"),
    fencingId: fc.integer({ min: 1, max: 5 }),
    leaseMs: fc.integer({ min: 1, max: 500 }),
    ttlMs: fc.integer({ min: 1, max: 500 }),
    token: fc.constantFrom("a", "b", "c"),
    firstFence: fc.integer({ min: 1, max: 10 }),
  });

  it("fence never falls; writes need a matching live fence; a claim outlives its lease", () => {
    fc.assert(
      fc.property(record, time, call, (before, now, c) => {
        const claim = { key: KEY, fencingId: c.fencingId };
        const t =
          c.kind === "claim"
            ? claimTransition(before, now, { key: KEY, ...c }, c.firstFence)
            : c.kind === "complete"
              ? completeTransition(before, now, { claim, ttlMs: c.ttlMs })
              : c.kind === "release"
                ? releaseTransition(before, now, { claim, ttlMs: c.ttlMs })
                : c.kind === "renew"
                  ? renewTransition(before, now, { claim, leaseMs: c.leaseMs, ttlMs: c.ttlMs })
                  : purgeTransition(before, now);
        expect(t.row.startsWith(`${c.kind}.`)).toBe(true);
        const after = t.write;
        if (after === undefined) return;
        if (after === "delete") {
          // Only a record past expiresAt is deleted (a claimed one is past its lease then too).
          expect(before !== undefined && now >= before.expiresAt).toBe(true);
          return;
        }
        if (after.state === "claimed") {
          expect(after.expiresAt).toBeGreaterThanOrEqual(after.leaseExpiresAt);
        }
        expect(after.fencingId).toBeGreaterThanOrEqual(before?.fencingId ?? 1);
        if (c.kind === "claim") {
          // A claim writes only over no record, a lapsed lease or an elapsed ttl.
          const live =
            before !== undefined &&
            now < (before.state === "done" ? before.expiresAt : before.leaseExpiresAt);
          expect(live).toBe(false);
          expect(after.fencingId).toBe(before === undefined ? c.firstFence : before.fencingId + 1);
        } else {
          expect(before?.fencingId).toBe(c.fencingId);
          expect(now).toBeLessThan(before?.expiresAt ?? Number.NEGATIVE_INFINITY);
          expect(after.fencingId).toBe(c.fencingId + (c.kind === "release" ? 1 : 0));
        }
      }),
      { numRuns: 2_000 },
    );
  });
});
