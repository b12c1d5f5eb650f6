import {
  type ContractContext,
  LEASE_END_CASE_LEASE_MS,
  LEASE_END_TOLERANCE_MS,
  won,
} from "./contract-context.js";
import { CaseDoesNotApply } from "./contract-skip.js";
import { expect } from "./expect.js";

/** Register these cases of the backend contract. */
export function describeClaimCases(c: ContractContext): void {
  const { describe, freshKey, advance, withBackend, withShortTtl, target } = c;
  describe("claim", () => {
    withBackend("absent → won at a positive fence", async (b) => {
      const key = freshKey("absent");
      const claim = won(await b.claim(key, c.leaseMs()));
      expect(claim.key).toBe(key);
      // The first fence is the store's own (a clock reading or a sequence), not always 1.
      expect(Number.isSafeInteger(claim.fencingId) && claim.fencingId > 0).toBe(true);
      expect(Number.isSafeInteger(claim.leaseExpiresAt)).toBe(true);
    });

    withBackend(
      `absent → won with a lease ending leaseMs after the claim, by the store's clock (±${LEASE_END_TOLERANCE_MS} ms)`,
      async (b) => {
        const key = freshKey("lease-end");
        const probe = freshKey("lease-end-probe");
        // A clock reading before the claim and one after it: the target's clock, else the
        // store's (inspect's `now`, read on a record of the case's own), else this process's.
        let read: (key: string) => Promise<number>;
        if (target.now) {
          const now = target.now.bind(target);
          read = async () => now();
        } else if (b.inspect) {
          const inspect = b.inspect.bind(b);
          won(await b.claim(probe, LEASE_END_CASE_LEASE_MS));
          read = async (of) => {
            const record = await inspect(of);
            if (record === undefined) throw new Error(`inspect found no record of ${of}`);
            return record.now;
          };
        } else if (!target.advance) {
          read = async () => Date.now();
        } else {
          throw new CaseDoesNotApply(
            "the target moves its own clock (advance) but has no now(), and the backend " +
              "has no inspect(): there is no clock to compare the lease end with",
          );
        }
        const before = await read(probe);
        const claim = won(await b.claim(key, LEASE_END_CASE_LEASE_MS));
        const after = await read(key);
        expect(claim.leaseExpiresAt).toBeGreaterThanOrEqual(
          before + LEASE_END_CASE_LEASE_MS - LEASE_END_TOLERANCE_MS,
        );
        expect(claim.leaseExpiresAt).toBeLessThanOrEqual(
          after + LEASE_END_CASE_LEASE_MS + LEASE_END_TOLERANCE_MS,
        );
      },
    );

    withBackend("claimed, lease live → held with the holder's lease end", async (b) => {
      const key = freshKey("held");
      const first = won(await b.claim(key, 60_000));
      const second = await b.claim(key, 60_000);
      expect(second).toEqual({ status: "held", leaseExpiresAt: first.leaseExpiresAt });
    });

    withBackend(
      "claimed, lease lapsed → won at fence + 1 (a crashed holder self-heals)",
      async (b) => {
        const key = freshKey("crashed");
        const first = won(await b.claim(key, c.leaseMs()));
        // The holder "crashes": it never completes or releases.
        await advance(c.leaseMs() + c.slack());
        const second = won(await b.claim(key, c.leaseMs()));
        expect(second.fencingId).toBe(first.fencingId + 1);
        expect(second.leaseExpiresAt).toBeGreaterThanOrEqual(first.leaseExpiresAt);
      },
    );

    withBackend("done, within ttl → done", async (b) => {
      const key = freshKey("done");
      const claim = won(await b.claim(key, c.leaseMs()));
      expect(await b.complete(claim)).toBe(true);
      expect(await b.claim(key, c.leaseMs())).toEqual({ status: "done" });
    });

    withShortTtl("done, ttl elapsed → won again at a higher fence", async (b) => {
      const key = freshKey("ttl");
      const claim = won(await b.claim(key, c.leaseMs()));
      expect(await b.complete(claim)).toBe(true);
      await advance(c.ttlMs() + c.slack());
      const again = won(await b.claim(key, c.leaseMs()));
      // +1 while the record exists; a store that already deleted it starts a new record above.
      expect(again.fencingId).toBeGreaterThan(claim.fencingId);
    });

    withShortTtl(
      "a fence never restarts: after the record is deleted past its ttl, the old claim cannot complete, release or renew the next one",
      async (b) => {
        const key = freshKey("fence-restart");
        // The first holder outlives its lease and the record's ttl: a ttl shorter than its life.
        const old = won(await b.claim(key, c.leaseMs()));
        await advance(c.leaseMs() + c.ttlMs() + c.slack());
        // Delete the expired record where the store does not do it by itself (Redis does).
        await b.purgeExpired?.();
        const next = won(await b.claim(key, 60_000));
        expect(next.fencingId).toBeGreaterThan(old.fencingId);
        if (b.renew) expect(await b.renew(old, 60_000)).toBe(false);
        await b.release(old);
        expect(await b.complete(old)).toBe(false);
        // The new holder's record is untouched: still held to its own lease end, and its own.
        expect(await b.claim(key, 60_000)).toEqual({
          status: "held",
          leaseExpiresAt: next.leaseExpiresAt,
        });
        expect(await b.complete(next)).toBe(true);
        expect(await b.claim(key, c.leaseMs())).toEqual({ status: "done" });
      },
    );
  });
}
