// The purgeExpired case of the backend contract: a purge deletes exactly the records past their
// expiresAt (docs/state-machine.md, rows purge.expired and purge.kept) and nothing live.
import { MAX_LEASE_MS } from "../core/constants.js";
import type { Claim, ClaimOutcome } from "../core/port.js";
import type { BackendWith, OptionalMethod } from "./contract-skip.js";
import { expect } from "./expect.js";

/** What the contract suite shares with this case; the lease and ttl are read when it runs. */
export interface PurgeCaseContext {
  readonly freshKey: (label: string) => string;
  readonly leaseMs: () => number;
  readonly ttlMs: () => number;
  readonly slack: () => number;
  readonly advance: (ms: number) => Promise<void>;
  /** Registers a case on a backend with the short ttl, skipped when it lacks `needs`. */
  readonly withShortTtl: <M extends OptionalMethod>(
    title: string,
    fn: (backend: BackendWith<M>) => Promise<void>,
    options: { needs: readonly M[] },
  ) => void;
}

function won(outcome: ClaimOutcome): Claim {
  if (outcome.status !== "won") {
    throw new Error(`expected the claim to be won, got ${JSON.stringify(outcome)}`);
  }
  return outcome.claim;
}

/**
 * Register the purge case. It asserts on its own keys: on a shared store this purge may also
 * delete other tests' expired records, so the count it resolves to need only cover this
 * case's expired records that were still stored just before it, never match them exactly.
 */
export function describePurgeCase(context: PurgeCaseContext): void {
  const { freshKey, advance, withShortTtl } = context;

  withShortTtl(
    "purgeExpired deletes the expired records (done past its ttl, a lapsed claim past lease + ttl, a release past its ttl) and keeps the live ones",
    async (b) => {
      const leaseMs = context.leaseMs();
      const ttlMs = context.ttlMs();
      const wait = leaseMs + ttlMs + context.slack();
      // A lease that certainly outlasts the wait below: these records stay live through it.
      const longLeaseMs = Math.min(MAX_LEASE_MS, Math.max(60_000, 2 * wait));

      // Live at the purge: a claim on a long lease, and one completed after the wait (its
      // ttl starts then).
      const heldKey = freshKey("purge-live-held");
      const doneKey = freshKey("purge-live-done");
      const held = won(await b.claim(heldKey, longLeaseMs));
      const doneLater = won(await b.claim(doneKey, longLeaseMs));

      // Expired at the purge, one per way a record ends (expiresAt in the state machine):
      // done (expiresAt = complete + ttl), a claim whose holder vanished (lease end + ttl),
      // and a released claim (release + ttl).
      const expired: Claim[] = [];
      const done = won(await b.claim(freshKey("purge-expired-done"), leaseMs));
      expect(await b.complete(done)).toBe(true);
      expired.push(done);
      expired.push(won(await b.claim(freshKey("purge-expired-lapsed"), leaseMs)));
      const released = won(await b.claim(freshKey("purge-expired-released"), longLeaseMs));
      await b.release(released);
      expired.push(released);

      await advance(wait);
      // No lease guard on complete: DONE now, live for a whole ttl from here.
      expect(await b.complete(doneLater)).toBe(true);

      // No claim from here to the purge: a claim may itself delete expired records
      // (InMemoryLock's sweep), which would leave the purge less to count.
      // With inspect, the expired records the store has not deleted on its own yet; without
      // it, the count is the only evidence of the purge, and it must cover all three.
      let stored = expired.length;
      if (b.inspect) {
        stored = 0;
        for (const { key } of expired) if ((await b.inspect(key)) !== undefined) stored++;
      }
      const progress: number[] = [];
      const removed = await b.purgeExpired({ onProgress: (deleted) => progress.push(deleted) });
      expect(Number.isSafeInteger(removed)).toBe(true);
      // A backend that reports progress ends on the count it resolves to, counting up.
      if (progress.length > 0) expect(progress.at(-1)).toBe(removed);
      expect(progress).toEqual([...progress].sort((x, y) => x - y));
      expect(removed).toBeGreaterThanOrEqual(stored);

      if (b.inspect) {
        for (const { key } of expired) expect(await b.inspect(key)).toBe(undefined);
        expect(await b.inspect(heldKey)).toMatchObject({
          key: heldKey,
          state: "claimed",
          fencingId: held.fencingId,
          leaseExpiresAt: held.leaseExpiresAt,
        });
        expect(await b.inspect(doneKey)).toMatchObject({
          key: doneKey,
          state: "done",
          fencingId: doneLater.fencingId,
        });
      }
      // The live records answer as before; each expired key is won again, above its old fence.
      expect(await b.claim(heldKey, leaseMs)).toEqual({
        status: "held",
        leaseExpiresAt: held.leaseExpiresAt,
      });
      expect(await b.claim(doneKey, leaseMs)).toEqual({ status: "done" });
      for (const old of expired) {
        expect(won(await b.claim(old.key, leaseMs)).fencingId).toBeGreaterThan(old.fencingId);
      }
      expect(await b.complete(held)).toBe(true);
    },
    { needs: ["purgeExpired"] },
  );
}
