import { afterEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { InvalidConfiguration } from "../../src/core/errors.js";
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

// The real exactly-once behaviour is tested on the emulator (pull.emulator.test.ts); these
// message-likes are user input whose settle methods answer whatever they like.
describe("idempotentMessage settling with ackWithResponse / nackWithResponse", () => {
  /** A fake message whose *WithResponse methods answer `answer` (rejecting when `reject`). */
  function confirming(answer: unknown, reject = false, id?: string) {
    const m = fakeMessage("x", id === undefined ? {} : { messageId: id });
    const calls: string[] = [];
    const respond = (verb: string) => () => {
      calls.push(verb);
      return reject ? Promise.reject(answer) : Promise.resolve(answer);
    };
    return {
      message: {
        ...m,
        ackWithResponse: respond("ackWithResponse"),
        nackWithResponse: respond("nackWithResponse"),
      },
      calls,
      settlements: m.settlements,
    };
  }

  it("settles through them when the message has them, and an answered SUCCESS writes no line", async () => {
    const logger = captureLogger();
    const onMessage = idempotentMessage({ backend: new InMemoryLock(), logger }, () => {});
    const c = confirming("SUCCESS");
    await onMessage(c.message);
    expect(c.calls).toEqual(["ackWithResponse"]);
    expect(c.settlements).toEqual([]);
    expect(logger.lines).toEqual([]);
  });

  it.each([
    [
      "an AckError",
      { errorCode: "PERMISSION_DENIED", message: "PERMISSION_DENIED : denied" },
      true,
      "PERMISSION_DENIED",
    ],
    ["an answered INVALID", "INVALID", false, "INVALID"],
    ["an answer it does not know", "MAYBE", false, "OTHER"],
  ])("a refused ack (%s) is ack_failed with the code", async (_, answer, reject, code) => {
    const logger = captureLogger();
    let runs = 0;
    const onMessage = idempotentMessage({ backend: new InMemoryLock(), logger }, () => {
      runs += 1;
    });
    const c = confirming(answer, reject, "eo-1");
    await expect(onMessage(c.message)).resolves.toBeUndefined();
    const [line] = logger.lines;
    expect(logger.lines).toHaveLength(1);
    expect(line?.severity).toBe("WARNING");
    expect(line?.fields).toMatchObject({ key: "eo-1", outcome: "ack_failed", ackError: code });
    // The redelivery Pub/Sub makes of it meets the DONE record.
    const again = confirming("SUCCESS", false, "eo-1");
    await onMessage(again.message);
    expect(runs).toBe(1);
    expect(logger.lines.at(-1)?.fields.outcome).toBe("duplicate");
  });

  it("a refused ack of an unguarded delivery is an ERROR: nothing guards its redelivery", async () => {
    const logger = captureLogger();
    const onMessage = idempotentMessage(
      { backend: new InMemoryLock(), logger, key: () => undefined, allowUnguarded: true },
      () => {},
    );
    await onMessage(confirming({ errorCode: "FAILED_PRECONDITION" }, true).message);
    const failed = logger.lines.filter((l) => l.fields.outcome === "ack_failed");
    expect(failed.map((l) => l.severity)).toEqual(["ERROR"]);
    expect(failed[0]?.message).toContain("runs the handler again");
  });

  it("a refused nack is a WARNING and the outcome stands; a non-AckError rejection is settle_failed", async () => {
    const logger = captureLogger();
    const onMessage = idempotentMessage({ backend: new InMemoryLock(), logger }, () => {
      throw new Error("boom");
    });
    await onMessage(confirming({ errorCode: "INVALID" }, true).message);
    expect(logger.lines.map((l) => [l.severity, l.fields.outcome, l.fields.ackError])).toEqual([
      ["ERROR", "failed", undefined],
      ["WARNING", "settle_failed", "INVALID"],
    ]);
    const other = captureLogger();
    const ok = idempotentMessage({ backend: new InMemoryLock(), logger: other }, () => {});
    await ok(confirming(new TypeError("channel closed"), true).message);
    expect(other.lines.map((l) => [l.severity, l.fields.outcome])).toEqual([
      ["ERROR", "settle_failed"],
    ]);
  });

  it("exactlyOnce: false uses ack() and nack() even when the message has the others", async () => {
    const onMessage = idempotentMessage(
      { backend: new InMemoryLock(), logger: captureLogger(), exactlyOnce: false },
      () => {},
    );
    const c = confirming("SUCCESS");
    await onMessage(c.message);
    expect(c.calls).toEqual([]);
    expect(c.settlements).toEqual(["ack"]);
  });

  it("exactlyOnce: true with a message that cannot confirm: one ERROR line, and ack() all the same", async () => {
    const logger = captureLogger();
    const onMessage = idempotentMessage(
      { backend: new InMemoryLock(), logger, exactlyOnce: true },
      () => {},
    );
    const m = fakeMessage("x");
    await onMessage(m);
    expect(m.settlements).toEqual(["ack"]);
    expect(logger.at("ERROR").map((l) => l.fields.outcome)).toEqual(["settle_failed"]);
    expect(logger.at("ERROR")[0]?.message).toContain("options.exactlyOnce is true");
  });

  it("exactlyOnce must be a boolean", () => {
    expect(() =>
      idempotentMessage({ backend: new InMemoryLock(), exactlyOnce: "yes" as never }, () => {}),
    ).toThrow(InvalidConfiguration);
    expect(() =>
      idempotentMessage({ backend: new InMemoryLock(), exactlyOnce: "yes" as never }, () => {}),
    ).toThrow(/options\.exactlyOnce must be true or false/);
  });
});
