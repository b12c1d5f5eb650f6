import { createServer } from "node:http";
import { describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { idempotentHttp } from "../../src/surfaces/index.js";
import { simulatePushDeliveries } from "../../src/testing/push-simulator.js";
import { captureLogger, listen } from "../surfaces/helpers.js";

describe("simulatePushDeliveries", () => {
  it("delivers each message several times and the body runs once per message", async () => {
    const runs = new Map<string, number>();
    const fn = idempotentHttp(
      { backend: new InMemoryLock(), logger: captureLogger() },
      async (m) => {
        runs.set(m.messageId, (runs.get(m.messageId) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 20));
      },
    );
    const report = await simulatePushDeliveries({
      handler: fn,
      messages: [{ n: 1 }, { n: 2 }, "three", Buffer.from("four")],
      copies: 4,
      concurrency: 3,
      backoffMs: 10,
    });
    expect(report.unacked).toEqual([]);
    expect([...runs.values()]).toEqual([1, 1, 1, 1]);
    // Concurrent copies met a live holder (503) and were redelivered until they saw the duplicate.
    expect(report.statusCounts[503]).toBeGreaterThan(0);
    expect(report.statusCounts[204]).toBe(16);
    expect(report.deliveries).toBe(16 + (report.statusCounts[503] ?? 0));
  });

  it("posts to a url and reports failures that never ack", async () => {
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, () => {
      throw new Error("poison");
    });
    const s = await listen(createServer((req, res) => void fn(req, res)));
    try {
      const report = await simulatePushDeliveries({
        url: s.url,
        messages: ["x"],
        copies: 1,
        maxRedeliveries: 2,
        backoffMs: 1,
      });
      expect(report.statusCounts).toEqual({ 500: 3 });
      expect(report.unacked).toHaveLength(1);
      expect(report.messages[0]?.statuses).toEqual([500, 500, 500]);
    } finally {
      await s.close();
    }
  });

  it("refuses counts that would deliver nothing or loop, naming the option", async () => {
    const handler = idempotentHttp({ backend: new InMemoryLock() }, () => {});
    for (const [option, value] of [
      ["copies", 0],
      ["concurrency", 0],
      ["maxRedeliveries", -1],
      ["backoffMs", 1.5],
    ] as const) {
      await expect(
        simulatePushDeliveries({ handler, messages: ["x"], [option]: value }),
      ).rejects.toThrow(new RegExp(`${option} must be an integer`));
    }
  });
});
