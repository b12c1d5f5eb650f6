import type { Claim } from "../core/port.js";
import { type ContractContext, won } from "./contract-context.js";
import { expect } from "./expect.js";

/** Register these cases of the backend contract. */
export function describeFencedCases(c: ContractContext): void {
  const { describe, freshKey, advance, withBackend } = c;
  describe("complete", () => {
    withBackend("fence matches → true, and the key is done", async (b) => {
      const key = freshKey("complete");
      const claim = won(await b.claim(key, c.leaseMs()));
      expect(await b.complete(claim)).toBe(true);
      expect((await b.claim(key, c.leaseMs())).status).toBe("done");
    });

    withBackend(
      "commits on a fence match even after the lease lapsed (no lease guard)",
      async (b) => {
        const key = freshKey("late-complete");
        const claim = won(await b.claim(key, c.leaseMs()));
        await advance(c.leaseMs() + c.slack());
        expect(await b.complete(claim)).toBe(true);
        expect((await b.claim(key, c.leaseMs())).status).toBe("done");
      },
    );

    withBackend("a retried complete on a done record → true", async (b) => {
      const key = freshKey("complete-twice");
      const claim = won(await b.claim(key, c.leaseMs()));
      expect(await b.complete(claim)).toBe(true);
      expect(await b.complete(claim)).toBe(true);
      expect((await b.claim(key, c.leaseMs())).status).toBe("done");
    });

    withBackend("a zombie cannot complete over a newer claim", async (b) => {
      const key = freshKey("zombie-complete");
      const zombie = won(await b.claim(key, c.leaseMs()));
      await advance(c.leaseMs() + c.slack());
      const current = won(await b.claim(key, 60_000));
      expect(await b.complete(zombie)).toBe(false);
      // The newer holder is untouched and still owns the key.
      expect(await b.claim(key, 60_000)).toEqual({
        status: "held",
        leaseExpiresAt: current.leaseExpiresAt,
      });
      expect(await b.complete(current)).toBe(true);
      expect(await b.complete(zombie)).toBe(false);
    });

    withBackend("a claim for a key never claimed cannot complete", async (b) => {
      const key = freshKey("never");
      const forged: Claim = { key, fencingId: 1, leaseExpiresAt: Date.now() + 60_000 };
      expect(await b.complete(forged)).toBe(false);
      expect(won(await b.claim(key, c.leaseMs())).key).toBe(key);
    });
  });

  describe("release", () => {
    withBackend("advances the fence and frees the key at once", async (b) => {
      const key = freshKey("release");
      const first = won(await b.claim(key, 60_000));
      await b.release(first);
      const second = won(await b.claim(key, 60_000));
      expect(second.fencingId).toBe(first.fencingId + 1 + 1);
    });

    withBackend("a released claim can never complete later", async (b) => {
      const key = freshKey("release-complete");
      const first = won(await b.claim(key, 60_000));
      await b.release(first);
      expect(await b.complete(first)).toBe(false);
      expect(won(await b.claim(key, c.leaseMs())).fencingId).toBeGreaterThan(first.fencingId);
    });

    withBackend("a zombie cannot release over a newer claim", async (b) => {
      const key = freshKey("zombie-release");
      const zombie = won(await b.claim(key, c.leaseMs()));
      await advance(c.leaseMs() + c.slack());
      const current = won(await b.claim(key, 60_000));
      await b.release(zombie);
      expect(await b.claim(key, 60_000)).toEqual({
        status: "held",
        leaseExpiresAt: current.leaseExpiresAt,
      });
      expect(await b.complete(current)).toBe(true);
    });

    withBackend("release on a done record is a no-op", async (b) => {
      const key = freshKey("release-done");
      const claim = won(await b.claim(key, c.leaseMs()));
      expect(await b.complete(claim)).toBe(true);
      await b.release(claim);
      expect((await b.claim(key, c.leaseMs())).status).toBe("done");
    });
  });

  describe("renew (when the backend has it)", () => {
    withBackend(
      "fence matches → true, and the lease moves forward",
      async (b) => {
        const key = freshKey("renew");
        const claim = won(await b.claim(key, c.leaseMs()));
        await advance(Math.round(c.leaseMs() / 2));
        expect(await b.renew(claim, 60_000)).toBe(true);
        await advance(c.leaseMs() + c.slack());
        // Past the first lease, but the renewal keeps it held.
        const outcome = await b.claim(key, c.leaseMs());
        expect(outcome.status).toBe("held");
        expect(await b.complete(claim)).toBe(true);
      },
      { needs: ["renew"] },
    );

    withBackend(
      "stale fence or done record → false",
      async (b) => {
        const key = freshKey("renew-stale");
        const zombie = won(await b.claim(key, c.leaseMs()));
        await advance(c.leaseMs() + c.slack());
        const current = won(await b.claim(key, c.leaseMs()));
        expect(await b.renew(zombie, 60_000)).toBe(false);
        expect(await b.complete(current)).toBe(true);
        expect(await b.renew(current, 60_000)).toBe(false);
        expect((await b.claim(key, c.leaseMs())).status).toBe("done");
      },
      { needs: ["renew"] },
    );
  });
}
