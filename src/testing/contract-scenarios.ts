// Scenarios across the rows: a rising fence, a mutex cycle, lock's duplicate, a race, opaque keys.
import { MAX_KEY_BYTES } from "../core/constants.js";
import { lock, mutex } from "../core/verbs/lock.js";
import { type ContractContext, silent, won } from "./contract-context.js";
import { expect } from "./expect.js";

/** Register these cases of the backend contract. */
export function describeScenarioCases(c: ContractContext): void {
  const { describe, freshKey, withBackend, target } = c;
  describe("scenarios", () => {
    withBackend("the fence only rises while the record exists", async (b) => {
      const key = freshKey("rising");
      const fences: number[] = [];
      let claim = won(await b.claim(key, 60_000));
      fences.push(claim.fencingId);
      for (let i = 0; i < 3; i++) {
        await b.release(claim);
        claim = won(await b.claim(key, 60_000));
        fences.push(claim.fencingId);
      }
      expect(fences).toEqual([...fences].sort((x, y) => x - y));
      expect(new Set(fences).size).toBe(fences.length);
    });

    withBackend("a mutex cycles claim → release without ever completing", async (b) => {
      const key = freshKey("mutex");
      const seen: number[] = [];
      for (let i = 0; i < 3; i++) {
        await mutex(key, { backend: b, leaseMs: 60_000, logger: silent }, (claim) => {
          seen.push(claim.fencingId);
        });
      }
      expect(seen).toHaveLength(3);
      expect(seen[1]! > seen[0]! && seen[2]! > seen[1]!).toBe(true);
      // Never DONE: the next claim wins straight away.
      expect((await b.claim(key, c.leaseMs())).status).toBe("won");
    });

    withBackend("lock runs the body once; a redelivery is a Duplicate", async (b) => {
      const key = freshKey("lock");
      let runs = 0;
      await lock(key, { backend: b, leaseMs: 60_000, logger: silent }, () => {
        runs++;
      });
      await expect(
        lock(key, { backend: b, leaseMs: 60_000, logger: silent }, () => {
          runs++;
        }),
      ).rejects.toMatchObject({ code: "DUPLICATE", key });
      expect(runs).toBe(1);
    });

    if (!target.skipConcurrency) {
      withBackend(
        "concurrent claims on one key admit exactly one",
        async (b) => {
          const key = freshKey("race");
          const n = target.concurrency ?? 32;
          const outcomes = await Promise.all(Array.from({ length: n }, () => b.claim(key, 60_000)));
          const winners = outcomes.filter((o) => o.status === "won");
          expect(winners).toHaveLength(1);
          expect(outcomes.filter((o) => o.status === "held")).toHaveLength(n - 1);
        },
        { timeoutMs: 60_000 },
      );
    }

    withBackend(
      "keys are opaque: unicode, '/', quotes, '%', case, spaces, 1,024 bytes",
      async (b) => {
        const base = freshKey("opaque");
        const long = `${base}:${"é".repeat(Math.floor((MAX_KEY_BYTES - base.length - 1) / 2))}`;
        expect(new TextEncoder().encode(long).length).toBeLessThanOrEqual(MAX_KEY_BYTES);
        expect(new TextEncoder().encode(long).length).toBeGreaterThan(MAX_KEY_BYTES - 3);
        const keys = [
          `${base}:a/b/c`,
          `${base}:A/B/C`,
          `${base}:a/b/c `,
          `${base}:'; DROP TABLE x; --`,
          `${base}:"quoted" \\ back`,
          `${base}:100%_like`,
          `${base}:日本語🙂`,
          `${base}:.`,
          `${base}:..`,
          `${base}:__name__`,
          long,
        ];
        const claims = [];
        for (const key of keys) {
          const claim = won(await b.claim(key, 60_000));
          expect(claim.key).toBe(key);
          claims.push(claim);
        }
        for (const claim of claims) expect(await b.complete(claim)).toBe(true);
        for (const key of keys) expect(await b.claim(key, 60_000)).toEqual({ status: "done" });
        // The base key itself was never claimed: none of the others collided with it.
        expect(won(await b.claim(`${base}:a/b`, 60_000)).key).toBe(`${base}:a/b`);
      },
    );
  });
}
