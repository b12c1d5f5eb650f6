// step(): where it finds its key, what a reused name does, and that a half-done body resumes.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assertValidKey,
  InMemoryLock,
  InvalidConfiguration,
  idempotentMessage,
  lock,
  MAX_KEY_BYTES,
  mutex,
  once,
  step,
  stepKey,
} from "../../../src/index.js";
import { fakeMessage } from "../../../src/testing/index.js";
import { silentLogger } from "../../support/logger.js";

const bytes = (text: string) => new TextEncoder().encode(text).length;

describe("stepKey", () => {
  it("two different (key, name) pairs never share a key, and every key is a valid one", () => {
    const key = fc.string({ unit: "grapheme", minLength: 1, maxLength: 400 });
    fc.assert(
      fc.property(key, key, key, key, (k1, n1, k2, n2) => {
        const a = stepKey(k1, n1);
        const b = stepKey(k2, n2);
        assertValidKey(a);
        expect(bytes(a)).toBeLessThanOrEqual(MAX_KEY_BYTES);
        expect(a === b).toBe(k1 === k2 && n1 === n2);
      }),
      { numRuns: 500 },
    );
  });

  it("hashes what would not fit the key rule", () => {
    const long = stepKey("k".repeat(1_010), "charge");
    expect(long).toMatch(/^step-sha256:[0-9a-f]{64}$/);
    expect(stepKey("orders:1", "charge")).toBe('["step","orders:1","charge"]');
  });
});

describe("step()", () => {
  it("outside any body it throws InvalidConfiguration, pointing at once(key, …)", async () => {
    await expect(step("charge", async () => 1)).rejects.toThrow(/use once\(key, options, body\)/);
  });

  it("records only where `steps: true` asked for it, or inside a body that did", async () => {
    const backend = new InMemoryLock();
    const bare = lock("plain", { backend }, () => step("s", async () => 1));
    await expect(bare).rejects.toThrow(/pass `steps: true` to the lock\(\), once\(\)/);
    expect(await backend.inspect(stepKey("plain", "s"))).toBeUndefined();
    // A lock inside a body that records steps records its own, keyed on the inner lock.
    await lock("outer", { backend, steps: true }, () =>
      lock("inner", { backend }, () => step("s", async () => 2)),
    );
    expect(await backend.inspect(stepKey("inner", "s"))).toMatchObject({ state: "done" });
    for (const steps of [1, "yes", null]) {
      const wrong = lock("k", { backend, steps } as never, async () => 1);
      await expect(wrong).rejects.toThrow(/options\.steps/);
    }
  });

  it("a mutex never takes `steps: true`: its key is shared by distinct messages", async () => {
    const backend = new InMemoryLock();
    const asked = mutex("entity:1", { backend, steps: true } as never, async () => 1);
    await expect(asked).rejects.toThrow(/mutex key is shared by distinct messages/);
    expect(backend.size).toBe(0);
  });

  it("a surface without `steps: true`: a step in the handler fails the delivery (nack)", async () => {
    const backend = new InMemoryLock();
    const listener = idempotentMessage({ backend, logger: silentLogger }, async () => {
      await step("charge", async () => 1);
    });
    const message = fakeMessage("order", { messageId: "m-1" });
    await listener(message);
    expect(message.settlements).toEqual(["nack"]);
    expect(await backend.inspect(stepKey("m-1", "charge"))).toBeUndefined();
  });

  it("inside a mutex alone it is refused; inside a mutex inside a lock it keys on the lock", async () => {
    const backend = new InMemoryLock();
    const alone = mutex("entity:1", { backend }, () => step("s", async () => 1));
    await expect(alone).rejects.toBeInstanceOf(InvalidConfiguration);
    let runs = 0;
    const run = () =>
      lock(`msg:${runs}`, { backend, steps: true }, () =>
        mutex("entity:1", { backend }, () => step("s", async () => ++runs)),
      );
    // Two messages under the same mutex key: each runs its own step (no replay across them).
    expect(await run()).toBe(1);
    expect(await run()).toBe(2);
    expect(await backend.inspect('["step","msg:0","s"]')).toMatchObject({ state: "done" });
  });

  it("a name used twice in one run is refused; a redelivery may use it again", async () => {
    const backend = new InMemoryLock();
    const error = await lock("k", { backend, steps: true }, async () => {
      await step("email", async () => 1);
      await step("email", async () => 2);
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidConfiguration);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the message suggests a template literal
    expect((error as Error).message).toContain("email:${i}");
    // The lock released (the body threw): the redelivery replays the first "email".
    const calls: number[] = [];
    await lock("k", { backend, steps: true }, async () => {
      calls.push(await step("email", async () => 3));
    });
    expect(calls).toEqual([1]);
  });

  it("nested: a step inside a step keys on the outer step; inside once() on the once key", async () => {
    const backend = new InMemoryLock();
    await once("o", { backend, steps: true }, async () => {
      await step("outer", async () => step("inner", async () => "x"));
    });
    const outer = stepKey("o", "outer");
    expect(await backend.inspect(outer)).toMatchObject({ state: "done" });
    expect(await backend.inspect(stepKey(outer, "inner"))).toMatchObject({ state: "done" });
  });

  it("concurrent runs of different keys never see each other's scope", async () => {
    const backend = new InMemoryLock();
    const seen = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        lock(`k${i}`, { backend, steps: true }, async () => {
          await new Promise((r) => setTimeout(r, (i * 7) % 13));
          return step("who", async () => i);
        }),
      ),
    );
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it("in a handler run without a claim (unkeyed, allowUnguarded) a step runs its body, unrecorded", async () => {
    const backend = new InMemoryLock();
    const calls: number[] = [];
    const listener = idempotentMessage(
      { backend, logger: silentLogger, key: () => undefined, allowUnguarded: true, steps: true },
      async () => {
        calls.push(await step("charge", async (claim) => claim.fencingId));
      },
    );
    const first = fakeMessage("a");
    const second = fakeMessage("a");
    await listener(first);
    await listener(second);
    expect([first.settlements, second.settlements]).toEqual([["ack"], ["ack"]]);
    expect(calls).toEqual([0, 0]);
    expect(backend.size).toBe(0);
  });

  it("in a surface's handler it keys on the delivery's key: a redelivery resumes", async () => {
    const backend = new InMemoryLock();
    const effects: string[] = [];
    let crash = true;
    const options = { backend, logger: silentLogger, steps: true };
    const listener = idempotentMessage(options, async (message) => {
      const charge = await step("charge", async () => {
        effects.push(`charge ${message.id}`);
        return "ch_1";
      });
      if (crash) {
        crash = false;
        throw new Error("between the steps");
      }
      await step("ship", async () => {
        effects.push(`ship ${charge}`);
      });
    });
    const first = fakeMessage("order", { messageId: "m-9" });
    const again = fakeMessage("order", { messageId: "m-9" });
    await listener(first);
    await listener(again);
    expect(first.settlements).toEqual(["nack"]);
    expect(again.settlements).toEqual(["ack"]);
    expect(effects).toEqual(["charge m-9", "ship ch_1"]);
  });
});
