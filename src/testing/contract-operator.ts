import { type ContractContext, won } from "./contract-context.js";
import { expect } from "./expect.js";

/** Register these cases of the backend contract. */
export function describeOperatorCases(c: ContractContext): void {
  const { describe, freshKey, withBackend } = c;
  describe("operator calls: inspect and forceRelease (when the backend has them)", () => {
    withBackend(
      "inspect: an absent key → undefined",
      async (b) => {
        expect(await b.inspect(freshKey("inspect-absent"))).toBe(undefined);
      },
      { needs: ["inspect"] },
    );

    withBackend(
      "inspect: a held key → claimed, its fence and lease, in the store's clock",
      async (b) => {
        const key = freshKey("inspect-held");
        const claim = won(await b.claim(key, 60_000));
        const record = await b.inspect(key);
        expect(record).toMatchObject({
          key,
          state: "claimed",
          fencingId: claim.fencingId,
          leaseExpiresAt: claim.leaseExpiresAt,
        });
        const { now, expiresAt } = record as NonNullable<typeof record>;
        expect(Number.isSafeInteger(now) && Number.isSafeInteger(expiresAt)).toBe(true);
        expect(claim.leaseExpiresAt).toBeGreaterThan(now);
        expect(expiresAt).toBeGreaterThan(claim.leaseExpiresAt);
      },
      { needs: ["inspect"] },
    );

    withBackend(
      "inspect: a done key → done, expiring after now",
      async (b) => {
        const key = freshKey("inspect-done");
        const claim = won(await b.claim(key, c.leaseMs()));
        expect(await b.complete(claim)).toBe(true);
        const record = await b.inspect(key);
        expect(record).toMatchObject({ key, state: "done", fencingId: claim.fencingId });
        const { now, expiresAt } = record as NonNullable<typeof record>;
        expect(expiresAt).toBeGreaterThan(now);
      },
      { needs: ["inspect"] },
    );

    withBackend(
      "forceRelease at the held fence → released; the next claim wins at fence + 2 and the old holder is fenced out",
      async (b) => {
        const key = freshKey("force-release");
        const stuck = won(await b.claim(key, 60_000));
        expect(await b.forceRelease(key, stuck.fencingId)).toEqual({
          status: "released",
          fencingId: stuck.fencingId + 1,
        });
        const next = won(await b.claim(key, 60_000));
        expect(next.fencingId).toBe(stuck.fencingId + 2);
        expect(await b.complete(stuck)).toBe(false);
        expect(await b.complete(next)).toBe(true);
      },
      { needs: ["forceRelease"] },
    );

    withBackend(
      "forceRelease with another fence → changed, the claim untouched",
      async (b) => {
        const key = freshKey("force-release-changed");
        const holder = won(await b.claim(key, 60_000));
        expect(await b.forceRelease(key, holder.fencingId + 1)).toEqual({
          status: "changed",
          fencingId: holder.fencingId,
        });
        expect(await b.claim(key, 60_000)).toEqual({
          status: "held",
          leaseExpiresAt: holder.leaseExpiresAt,
        });
        expect(await b.complete(holder)).toBe(true);
      },
      { needs: ["forceRelease"] },
    );

    withBackend(
      "forceRelease never touches a done record, nor an absent one",
      async (b) => {
        const key = freshKey("force-release-done");
        const claim = won(await b.claim(key, c.leaseMs()));
        expect(await b.complete(claim)).toBe(true);
        expect(await b.forceRelease(key, claim.fencingId)).toEqual({ status: "done" });
        expect(await b.claim(key, c.leaseMs())).toEqual({ status: "done" });
        expect(await b.forceRelease(freshKey("force-release-absent"), 1)).toEqual({
          status: "absent",
        });
      },
      { needs: ["forceRelease"] },
    );
  });
}
