import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Claim, Duplicate, InMemoryLock, InProgress, lock } from "../../src/index.js";
import { createFakeClock } from "../../src/testing/index.js";

const TTL = 50;
const ACTORS = 3;

/** The transition table, written as plainly as possible, to check InMemoryLock against. */
interface ModelRecord {
  state: "claimed" | "done";
  fence: number;
  leaseEnd: number;
  expiresAt: number;
}

type Action =
  | { kind: "claim"; actor: number; lease: number }
  | { kind: "complete"; actor: number }
  | { kind: "release"; actor: number }
  | { kind: "renew"; actor: number; lease: number }
  | { kind: "advance"; ms: number };

const actor = fc.integer({ min: 0, max: ACTORS - 1 });
const lease = fc.constantFrom(1, 10, 30);
const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant("claim" as const), actor, lease }),
  fc.record({ kind: fc.constant("complete" as const), actor }),
  fc.record({ kind: fc.constant("release" as const), actor }),
  fc.record({ kind: fc.constant("renew" as const), actor, lease }),
  fc.record({
    kind: fc.constant("advance" as const),
    // Exact lease and ttl lengths hit the boundaries, where an off-by-one would hide.
    ms: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constantFrom(1, 10, 30, TTL)),
  }),
);

describe("InMemoryLock against a model of the transition table", () => {
  it("keeps the fence rising, one live holder, stale fences out, DONE for exactly the ttl", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(action, { maxLength: 60 }), async (actions) => {
        const clock = createFakeClock(1_000_000);
        const backend = new InMemoryLock({ ttlMs: TTL, now: clock.now });
        const key = "k";
        let record: ModelRecord | undefined;
        // The highest fence the key's record has had, deleted or not.
        let highest = 0;
        const held: (Claim | undefined)[] = Array.from({ length: ACTORS }, () => undefined);
        const live = (c: Claim | undefined) =>
          c !== undefined &&
          record?.state === "claimed" &&
          record.fence === c.fencingId &&
          clock.now() < record.leaseEnd;

        for (const a of actions) {
          const now = clock.now();
          if (record !== undefined) highest = Math.max(highest, record.fence);
          // Past expiresAt a record may be deleted at any moment; the model forgets it lazily.
          const deletable = record !== undefined && now >= record.expiresAt;
          switch (a.kind) {
            case "advance":
              clock.advance(a.ms);
              break;
            case "claim": {
              const out = await backend.claim(key, a.lease);
              if (record === undefined || deletable) {
                expect(out.status).toBe("won");
                if (out.status !== "won") break;
                // A new record starts above every fence the key had: the fence never restarts.
                expect(out.claim.fencingId).toBeGreaterThan(highest);
                if (record !== undefined && out.claim.fencingId !== record.fence + 1) {
                  expect(deletable).toBe(true);
                }
              } else if (record.state === "done") {
                expect(out).toEqual({ status: "done" });
                break;
              } else if (now < record.leaseEnd) {
                expect(out).toEqual({ status: "held", leaseExpiresAt: record.leaseEnd });
                break;
              } else {
                expect(out.status).toBe("won");
                if (out.status !== "won") break;
                // The record exists: its fence must rise by exactly one.
                expect(out.claim.fencingId).toBe(record.fence + 1);
              }
              if (out.status !== "won") break;
              // At most one live holder: nobody else may still hold a live lease.
              expect(held.filter(live)).toEqual([]);
              record = {
                state: "claimed",
                fence: out.claim.fencingId,
                leaseEnd: now + a.lease,
                expiresAt: now + a.lease + TTL,
              };
              held[a.actor] = out.claim;
              break;
            }
            case "complete": {
              const claim = held[a.actor];
              if (!claim) break;
              const ok = await backend.complete(claim);
              const matches =
                record !== undefined && !deletable && record.fence === claim.fencingId;
              // A stale fence never completes; a matching one always does, lease or not.
              expect(ok).toBe(matches);
              if (matches && record && record.state === "claimed") {
                record = { ...record, state: "done", expiresAt: now + TTL };
              }
              break;
            }
            case "release": {
              const claim = held[a.actor];
              if (!claim) break;
              await backend.release(claim);
              if (
                record &&
                !deletable &&
                record.state === "claimed" &&
                record.fence === claim.fencingId
              ) {
                record = {
                  ...record,
                  fence: record.fence + 1,
                  leaseEnd: now,
                  expiresAt: now + TTL,
                };
              }
              break;
            }
            case "renew": {
              const claim = held[a.actor];
              if (!claim) break;
              const ok = await backend.renew(claim, a.lease);
              const matches =
                record !== undefined &&
                !deletable &&
                record.state === "claimed" &&
                record.fence === claim.fencingId;
              expect(ok).toBe(matches);
              if (matches && record) {
                record = { ...record, leaseEnd: now + a.lease, expiresAt: now + a.lease + TTL };
              }
              break;
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("lock() under explored interleavings", () => {
  it("runs at most one body per key, whatever order the store answers in", async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.integer({ min: 2, max: 6 }), async (s, callers) => {
        const inner = new InMemoryLock();
        // Every store answer is scheduled by fast-check, so the calls interleave in any order.
        const backend = {
          claim: s.scheduleFunction(async (k: string, l: number) => inner.claim(k, l)),
          complete: s.scheduleFunction(async (c: Claim) => inner.complete(c)),
          release: s.scheduleFunction(async (c: Claim) => inner.release(c)),
        };
        const silent = { info() {}, warn() {}, error() {} };
        let bodies = 0;
        const calls = Array.from({ length: callers }, () =>
          lock("one-key", { backend, logger: silent }, async () => {
            bodies++;
          }).catch((error: unknown) => {
            if (!(error instanceof Duplicate || error instanceof InProgress)) throw error;
          }),
        );
        await s.waitFor(Promise.all(calls));
        expect(bodies).toBe(1);
      }),
      { numRuns: 200 },
    );
  });
});
