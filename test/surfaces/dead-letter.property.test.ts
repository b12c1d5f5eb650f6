// The `deadLetter` option's rules under fast-check: what is accepted where the surface is built,
// and which deliveries wait for a holder or reach onExhausted.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { InvalidConfiguration } from "../../src/core/errors.js";
import {
  knownAttempt,
  LAST_ATTEMPTS_MARGIN,
  onLastAttempts,
  resolveDeadLetter,
} from "../../src/surfaces/dead-letter.js";
import { idempotent, idempotentHttp, idempotentMessage } from "../../src/surfaces/index.js";
import { fakeMessage } from "../../src/testing/index.js";
import { captureLogger } from "./helpers.js";

const surfaces = {
  idempotentHttp: (deadLetter: unknown) =>
    idempotentHttp({ backend: new InMemoryLock(), deadLetter } as never, () => {}),
  idempotent: (deadLetter: unknown) =>
    idempotent({ backend: new InMemoryLock(), deadLetter } as never, () => {}),
  idempotentMessage: (deadLetter: unknown) =>
    idempotentMessage({ backend: new InMemoryLock(), deadLetter } as never, () => {}),
};

/** Anything at all, weighted toward the near misses of a whole number from 5 to 100. */
const anyAttempts = fc.oneof(
  fc.integer({ min: -1_000, max: 1_000 }),
  fc.double(),
  fc.constantFrom(4, 4.5, 5, 100, 100.5, 101, 0, -0, Number.NaN, Number.POSITIVE_INFINITY),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, 2 ** 53),
  fc.string(),
  fc.constantFrom(null, undefined, true, "10", 10n),
  fc.anything(),
);
const valid = (value: unknown) =>
  typeof value === "number" && Number.isInteger(value) && value >= 5 && value <= 100;

describe("options.deadLetter, checked where each surface is built", () => {
  it("maxDeliveryAttempts: a whole number from 5 to 100, else a refusal naming it", () => {
    fc.assert(
      fc.property(
        anyAttempts,
        fc.constantFrom(...(Object.keys(surfaces) as (keyof typeof surfaces)[])),
        (max, surface) => {
          const build = () => surfaces[surface]({ maxDeliveryAttempts: max });
          if (valid(max)) {
            expect(build).not.toThrow();
          } else {
            expect(build).toThrow(InvalidConfiguration);
            expect(build).toThrow(
              new RegExp(
                `^${surface}\\(\\) options\\.deadLetter\\.maxDeliveryAttempts must be a whole number from 5 to 100`,
              ),
            );
          }
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it("onExhausted: a function or absent; maxWaitMs: positive whole ms or absent", () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (hook, wait) => {
        const build = () =>
          resolveDeadLetter("idempotentHttp()", {
            maxDeliveryAttempts: 10,
            onExhausted: hook,
            maxWaitMs: wait,
          });
        const hookOk = hook === undefined || typeof hook === "function";
        const waitOk =
          wait === undefined ||
          (typeof wait === "number" && Number.isInteger(wait) && wait >= 1 && wait <= 2 ** 31 - 1);
        if (hookOk && waitOk) expect(build).not.toThrow();
        else if (!hookOk) expect(build).toThrow(/deadLetter\.onExhausted must be a function/);
        else expect(build).toThrow(/maxWaitMs/);
      }),
      { numRuns: 1_000 },
    );
  });

  it("the option itself: an object, with no option it does not know", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.constantFrom(null, 10, "10", true, [], () => {}),
          fc.array(fc.integer()),
        ),
        (value) => {
          expect(() => surfaces.idempotentMessage(value)).toThrow(
            /options\.deadLetter must be an object \{ maxDeliveryAttempts, onExhausted\? \}/,
          );
        },
      ),
    );
    expect(() => surfaces.idempotentHttp({ maxDeliveryAttempt: 10 })).toThrow(
      /`maxDeliveryAttempt` is not an option of idempotentHttp options.deadLetter; did you mean `maxDeliveryAttempts`\?/,
    );
    expect(() => surfaces.idempotentHttp({ maxAttempts: 10, maxDeliveryAttempts: 10 })).toThrow(
      /`maxAttempts` is not an option of idempotentHttp options.deadLetter; known options: maxDeliveryAttempts, onExhausted, maxWaitMs/,
    );
    expect(() => surfaces.idempotent({})).toThrow(/maxDeliveryAttempts must be a whole number/);
    const hostile = new Proxy(
      {},
      {
        ownKeys: () => ["maxDeliveryAttempts"],
        getOwnPropertyDescriptor: () => ({ enumerable: true, configurable: true }),
        get: () => {
          throw new Error("trap");
        },
      },
    );
    expect(() => surfaces.idempotentHttp(hostile)).toThrow(InvalidConfiguration);
  });
});

describe("which deliveries the dead-letter logic acts on", () => {
  it("waits on the last two attempts, and only on an attempt Pub/Sub counted", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 5, max: 100 }),
        fc.oneof(fc.integer({ min: -5, max: 300 }), fc.double(), fc.constant(undefined)),
        (max, attempt) => {
          const deadLetter = resolveDeadLetter("x()", { maxDeliveryAttempts: max });
          if (deadLetter === undefined) throw new Error("resolved to nothing");
          const known = knownAttempt({ deliveryAttempt: attempt as number | undefined });
          const counted =
            typeof attempt === "number" && Number.isSafeInteger(attempt) && attempt >= 1;
          expect(known).toBe(counted ? attempt : undefined);
          if (known !== undefined) {
            expect(onLastAttempts(deadLetter, known)).toBe(known >= max - LAST_ATTEMPTS_MARGIN);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it("onExhausted runs once exactly when the delivery is nacked on attempt ≥ max", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 5, max: 100 }),
        fc.option(fc.integer({ min: 0, max: 120 }), { nil: undefined }),
        fc.constantFrom("ran", "failed", "unkeyed", "duplicate"),
        async (max, attempt, ending) => {
          let calls = 0;
          const backend = new InMemoryLock();
          const listener = idempotentMessage(
            {
              backend,
              logger: captureLogger(),
              key: (m) => (ending === "unkeyed" ? undefined : m.id),
              deadLetter: { maxDeliveryAttempts: max, onExhausted: () => void calls++ },
            },
            () => {
              if (ending === "failed") throw new Error("poison");
            },
          );
          if (ending === "duplicate") await listener(fakeMessage("x", { messageId: "m" }));
          const message = fakeMessage("x", {
            messageId: "m",
            ...(attempt === undefined ? {} : { deliveryAttempt: attempt }),
          });
          await listener(message);
          const nacked = ending === "failed" || ending === "unkeyed";
          expect(message.settlements).toEqual([nacked ? "nack" : "ack"]);
          expect(calls).toBe(nacked && attempt !== undefined && attempt >= max ? 1 : 0);
        },
      ),
      { numRuns: 300 },
    );
  });
});
