// The cases of what a record keeps beyond its lease: once()'s result, replayed; a fingerprint,
// compared; step() resuming a half-done body. Run through the verbs, on the target's backend,
// so a backend is held to what users see. A backend that does not claim the support
// (`backend.supports`) is skipped with the reason.
import { Duplicate, InProgress, PayloadMismatch } from "../core/errors.js";
import type { LockBackend } from "../core/port.js";
import { lock } from "../core/verbs/lock.js";
import { once } from "../core/verbs/once.js";
import { step } from "../core/verbs/step.js";
import { type ContractContext, silent, won } from "./contract-context.js";
import { CaseDoesNotApply } from "./contract-skip.js";
import { expect } from "./expect.js";

/** A lease no case outlives: these cases never wait one out. */
const LONG_LEASE_MS = 60_000;

/** Every JSON type, nested, and text that a store's encoding could mangle. */
const RESULTS: readonly (readonly [string, unknown])[] = [
  ["null", null],
  ["true", true],
  ["false", false],
  ["zero", 0],
  ["a negative fraction", -1.5],
  ["a large number", 1e21],
  ["an empty string", ""],
  ["text with quotes, backslashes, newlines and non-ASCII", 'a "q" \\ \n\t é 中 😀 \u2028'],
  ["an empty array", []],
  ["nested arrays and objects", [1, [2, { a: null, b: [true, "x"] }], {}]],
  ["an object", { orderId: "ord_1", total: 99.5, lines: [{ sku: "A", n: 2 }], paid: false }],
  ["undefined (a body that returns nothing)", undefined],
  ["a string of 20 KiB", "r".repeat(20 * 1024)],
];

function needsResults(backend: LockBackend, what: "results" | "fingerprints"): void {
  const supports = backend.supports;
  if (supports?.[what] !== true) {
    throw new CaseDoesNotApply(
      `backend.supports.${what} is not true: the backend keeps no ${what}`,
    );
  }
}

/** Register these cases of the backend contract. */
export function describeRecordCases(c: ContractContext): void {
  const { describe, freshKey, withBackend, withShortTtl, advance } = c;
  const options = (backend: LockBackend, more: Record<string, unknown> = {}) => ({
    backend,
    leaseMs: LONG_LEASE_MS,
    logger: silent,
    telemetry: false,
    ...more,
  });

  describe("records that remember (once, fingerprints, step)", () => {
    withBackend("once: a result of every JSON type is replayed to every later call", async (b) => {
      needsResults(b, "results");
      for (const [label, value] of RESULTS) {
        const key = freshKey("once-json");
        let runs = 0;
        const body = async () => {
          runs += 1;
          return value;
        };
        expect(await once(key, options(b), body)).toEqual(value);
        const again = await once(key, options(b), async () => ({ other: label }));
        expect(again).toEqual(value);
        expect(runs).toBe(1);
      }
    });

    withBackend(
      "once: six concurrent calls run one body; the others reject InProgress",
      async (b) => {
        needsResults(b, "results");
        const key = freshKey("once-six");
        let runs = 0;
        let release: () => void = () => {};
        const gate = new Promise<void>((resolve) => {
          release = resolve;
        });
        const body = async () => {
          runs += 1;
          await gate;
          return { ran: runs };
        };
        // The holder's body waits until the five other calls have answered.
        let answered = 0;
        const calls = Array.from({ length: 6 }, () =>
          once(key, options(b), body).finally(() => {
            answered += 1;
          }),
        );
        for (const call of calls) {
          void call.then(
            () => answered >= 5 && release(),
            () => answered >= 5 && release(),
          );
        }
        const results = await Promise.allSettled(calls);
        expect(runs).toBe(1);
        const values = results.filter((r) => r.status === "fulfilled");
        expect(values).toHaveLength(1);
        for (const r of results) {
          if (r.status === "rejected") expect(r.reason instanceof InProgress).toBe(true);
        }
      },
    );

    withBackend(
      "once: with waitMs, six concurrent calls all resolve to the one run's result",
      async (b) => {
        needsResults(b, "results");
        const key = freshKey("once-wait");
        let runs = 0;
        const body = async () => {
          runs += 1;
          await new Promise((resolve) => setTimeout(resolve, 100));
          return { orderId: `ord_${runs}` };
        };
        const results = await Promise.all(
          Array.from({ length: 6 }, () => once(key, options(b, { waitMs: 20_000 }), body)),
        );
        expect(runs).toBe(1);
        for (const result of results) expect(result).toEqual({ orderId: "ord_1" });
      },
    );

    withBackend("once: a body that throws records nothing; the next call runs", async (b) => {
      needsResults(b, "results");
      const key = freshKey("once-throw");
      const boom = new Error("the body failed");
      await expect(
        once(key, options(b), async () => {
          throw boom;
        }),
      ).rejects.toMatchObject({ message: "the body failed" });
      expect(await once(key, options(b), async () => "second")).toBe("second");
      expect(await once(key, options(b), async () => "third")).toBe("second");
    });

    withBackend(
      "once over a key lock() completed rejects Duplicate (no result to replay)",
      async (b) => {
        needsResults(b, "results");
        const key = freshKey("once-after-lock");
        await lock(key, options(b), async () => "not recorded");
        let ran = false;
        const outcome = await once(key, options(b), async () => {
          ran = true;
        }).then(
          () => "resolved",
          (error: unknown) => error,
        );
        expect(outcome instanceof Duplicate).toBe(true);
        expect(ran).toBe(false);
      },
    );

    withBackend(
      "fingerprint: another payload under a done key rejects PayloadMismatch (lock and once)",
      async (b) => {
        needsResults(b, "fingerprints");
        needsResults(b, "results");
        for (const verb of ["lock", "once"] as const) {
          const key = freshKey(`mismatch-${verb}`);
          const run = verb === "lock" ? lock : once;
          let runs = 0;
          const body = async () => {
            runs += 1;
            return runs;
          };
          expect(await run(key, options(b, { fingerprint: "payload-A" }), body)).toBe(1);
          const other = await run(key, options(b, { fingerprint: "payload-B" }), body).then(
            () => "resolved",
            (error: unknown) => error,
          );
          expect(other instanceof PayloadMismatch).toBe(true);
          expect((other as PayloadMismatch).key).toBe(key);
          // The same payload is a duplicate as ever; no fingerprint means no comparison. One
          // call at a time: a second call started beside the first could reject before its
          // handler is attached (an unhandled rejection on a slow store).
          const same = () => run(key, options(b, { fingerprint: "payload-A" }), body);
          const none = () => run(key, options(b), body);
          if (verb === "once") {
            expect(await same()).toBe(1);
            expect(await none()).toBe(1);
          } else {
            await expect(same()).rejects.toMatchObject({ code: "DUPLICATE" });
            await expect(none()).rejects.toMatchObject({ code: "DUPLICATE" });
          }
          expect(runs).toBe(1);
        }
      },
    );

    withBackend(
      "fingerprint: another payload under a held key rejects PayloadMismatch, not InProgress",
      async (b) => {
        needsResults(b, "fingerprints");
        const key = freshKey("mismatch-held");
        won(await b.claim(key, LONG_LEASE_MS, { fingerprint: "payload-A" }));
        const held = await b.claim(key, LONG_LEASE_MS, { fingerprint: "payload-B" });
        expect(held).toMatchObject({ status: "held", fingerprint: "payload-A" });
        const outcome = await lock(
          key,
          options(b, { fingerprint: "payload-B" }),
          async () => {},
        ).then(
          () => "resolved",
          (error: unknown) => error,
        );
        expect(outcome instanceof PayloadMismatch).toBe(true);
      },
    );

    withBackend("port: claim answers done with the stored fingerprint and result", async (b) => {
      needsResults(b, "fingerprints");
      needsResults(b, "results");
      const key = freshKey("port-done");
      const claim = won(await b.claim(key, LONG_LEASE_MS, { fingerprint: "fp-1" }));
      expect(await b.complete(claim, 'r:{"id":7}')).toBe(true);
      const done = await b.claim(key, LONG_LEASE_MS);
      expect(done).toEqual({ status: "done", fingerprint: "fp-1", result: 'r:{"id":7}' });
      const plain = freshKey("port-plain");
      expect(await b.complete(won(await b.claim(plain, LONG_LEASE_MS)))).toBe(true);
      expect(await b.claim(plain, LONG_LEASE_MS)).toEqual({ status: "done" });
    });

    withShortTtl(
      "port: a claim after the ttl wins a record without the old result or fingerprint",
      async (b) => {
        needsResults(b, "fingerprints");
        needsResults(b, "results");
        const key = freshKey("port-expired");
        const first = won(await b.claim(key, c.leaseMs(), { fingerprint: "old" }));
        expect(await b.complete(first, "r:1")).toBe(true);
        await advance(c.leaseMs() + c.ttlMs() + c.slack());
        const second = won(await b.claim(key, c.leaseMs()));
        expect(await b.complete(second)).toBe(true);
        expect(await b.claim(key, c.leaseMs())).toEqual({ status: "done" });
      },
    );

    withBackend(
      "step inside lock: a redelivery after a failure between two steps replays the first and runs the second",
      async (b) => {
        needsResults(b, "results");
        const key = freshKey("steps");
        const effects: string[] = [];
        let failBetween = true;
        const handler = () =>
          lock(key, { ...options(b), steps: true }, async () => {
            const charge = await step("charge", async () => {
              effects.push("charge");
              return { chargeId: `ch_${effects.length}` };
            });
            if (failBetween) {
              failBetween = false;
              throw new Error("crashed between the charge and the shipment");
            }
            await step("ship", async () => {
              effects.push(`ship with ${charge.chargeId}`);
            });
          });
        await expect(handler()).rejects.toMatchObject({
          message: "crashed between the charge and the shipment",
        });
        await handler();
        expect(effects).toEqual(["charge", "ship with ch_1"]);
        await expect(handler()).rejects.toMatchObject({ code: "DUPLICATE" });
        expect(effects).toHaveLength(2);
      },
    );
  });
}
