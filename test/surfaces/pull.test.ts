import { afterEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { idempotentMessage } from "../../src/surfaces/index.js";
import { fakeMessage } from "../../src/testing/index.js";
import { captureLogger, gate } from "./helpers.js";

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on("unhandledRejection", onUnhandled);
afterEach(() => {
  expect(unhandled).toEqual([]);
});

describe("idempotentMessage", () => {
  it("acks a success and acks a duplicate without running the handler", async () => {
    const logger = captureLogger();
    let calls = 0;
    const onMessage = idempotentMessage({ backend: new InMemoryLock(), logger }, () => {
      calls += 1;
    });
    const first = fakeMessage("x", { messageId: "p-1" });
    const again = fakeMessage("x", { messageId: "p-1" });
    await onMessage(first);
    await onMessage(again);
    expect(first.settlements).toEqual(["ack"]);
    expect(again.settlements).toEqual(["ack"]);
    expect(calls).toBe(1);
  });

  it("nacks on contention with one warning line carrying deliveryAttempt", async () => {
    const logger = captureLogger();
    const hold = gate();
    const onMessage = idempotentMessage(
      { backend: new InMemoryLock(), logger },
      () => hold.promise,
    );
    const a = fakeMessage("x", { messageId: "p-2", deliveryAttempt: 1 });
    const b = fakeMessage("x", { messageId: "p-2", deliveryAttempt: 4 });
    const running = onMessage(a);
    await new Promise((r) => setTimeout(r, 5));
    await onMessage(b);
    expect(b.settlements).toEqual(["nack"]);
    hold.open();
    await running;
    expect(a.settlements).toEqual(["ack"]);
    const warnings = logger.at("WARNING");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields).toMatchObject({ key: "p-2", deliveryAttempt: 4 });
    expect(Object.keys(warnings[0]?.fields ?? {})).not.toContain("stack");
  });

  it("nacks and logs when the handler throws; the redelivery runs", async () => {
    const logger = captureLogger();
    let calls = 0;
    const onMessage = idempotentMessage({ backend: new InMemoryLock(), logger }, () => {
      calls += 1;
      if (calls === 1) throw new Error("boom");
    });
    const first = fakeMessage("x", { messageId: "p-3" });
    await expect(onMessage(first)).resolves.toBeUndefined();
    expect(first.settlements).toEqual(["nack"]);
    expect(logger.at("ERROR")[0]?.fields.reason).toBe("Error: boom");
    const second = fakeMessage("x", { messageId: "p-3" });
    await onMessage(second);
    expect(second.settlements).toEqual(["ack"]);
  });

  it("nacks an unkeyed message and a store error, never rejecting", async () => {
    const logger = captureLogger();
    const unkeyed = idempotentMessage(
      { backend: new InMemoryLock(), logger, key: () => undefined },
      () => {},
    );
    const m = fakeMessage("x");
    await expect(unkeyed(m)).resolves.toBeUndefined();
    expect(m.settlements).toEqual(["nack"]);

    const broken = new InMemoryLock();
    broken.claim = () => Promise.reject(new Error("store down"));
    const n = fakeMessage("x");
    await idempotentMessage({ backend: broken, logger }, () => {})(n);
    expect(n.settlements).toEqual(["nack"]);
  });

  it("survives an ack() that throws", async () => {
    const logger = captureLogger();
    const m = fakeMessage("x");
    const exploding = {
      ...m,
      ack: () => {
        throw new Error("channel closed");
      },
    };
    await expect(
      idempotentMessage({ backend: new InMemoryLock(), logger }, () => {})(exploding),
    ).resolves.toBeUndefined();
    expect(logger.at("ERROR")[0]?.fields.outcome).toBe("settle_failed");
  });

  it("keys by a custom function of the message", async () => {
    const logger = captureLogger();
    let calls = 0;
    const onMessage = idempotentMessage(
      { backend: new InMemoryLock(), logger, key: (m) => m.attributes?.orderId },
      () => {
        calls += 1;
      },
    );
    // Two publishes of the same order (different message ids) run once.
    await onMessage(fakeMessage("x", { attributes: { orderId: "o-9" } }));
    await onMessage(fakeMessage("x", { attributes: { orderId: "o-9" } }));
    expect(calls).toBe(1);
  });
});
