// The functional run's stall rule: it gives up on a message only when the emulator stopped
// pushing it. A CI run once reported a message unacked whose 204 had come during the run's
// last wait, and a message still being pushed (each time to a worker the harness then killed)
// must be waited for, not reported.
import { describe, expect, it } from "vitest";
import { DeliveryProgress } from "../../functional/progress.js";
import type { Delivery } from "../../functional/records.js";

const STALL_MS = 45_000;

function push(messageId: string, status: number, t: number, answered = true): Delivery {
  return {
    scenario: "steps-datastore",
    subscription: "steps-datastore-sub",
    messageId,
    worker: 0,
    status,
    answered,
    startedAt: t - 50,
    t,
  };
}

describe("DeliveryProgress", () => {
  it("counts an ack recorded after the last read, before deciding on a stall", () => {
    const deliveries: Delivery[] = [push("1", 204, 1_000), push("2", 502, 2_000)];
    const progress = new DeliveryProgress(deliveries);
    progress.read();
    expect(progress.isAcked("steps-datastore-sub", "2")).toBe(false);
    // The 204 lands while the run waits; the next decision must see it.
    deliveries.push(push("2", 204, 46_000));
    expect(progress.silentFor(46_100, 0)).toBe(100);
    expect(progress.isAcked("steps-datastore-sub", "2")).toBe(true);
  });

  it("is not silent while an unacked message is still being pushed, however many fail", () => {
    const deliveries: Delivery[] = [push("1", 204, 1_000)];
    const progress = new DeliveryProgress(deliveries);
    for (let t = 10_000; t <= 100_000; t += 10_000) {
      deliveries.push(push("3050", 502, t));
      expect(progress.silentFor(t + 5_000, 0)).toBeLessThan(STALL_MS);
    }
  });

  it("control: goes silent when only acked messages or unanswered copies come", () => {
    const deliveries: Delivery[] = [push("1", 204, 1_000), push("2", 503, 2_000)];
    const progress = new DeliveryProgress(deliveries);
    // The emulator redelivers an acked message, and the proxy's extra copies go unanswered:
    // neither says the stranded message 2 is still being pushed.
    deliveries.push(push("1", 204, 30_000), push("2", 503, 40_000, false));
    expect(progress.silentFor(2_000 + STALL_MS + 1, 0)).toBeGreaterThan(STALL_MS);
    expect(progress.isAcked("steps-datastore-sub", "2")).toBe(false);
  });

  it("counts a phase's silence from its start, not from the last phase's last push", () => {
    const progress = new DeliveryProgress([push("1", 503, 1_000)]);
    expect(progress.silentFor(200_000, 190_000)).toBe(10_000);
  });
});
