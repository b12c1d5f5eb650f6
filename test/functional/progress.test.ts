// The functional run's stall rule (functional/progress.ts). A CI run once reported a message
// unacked whose 204 had come during the run's last wait; the message had been pushed six
// times, each to a worker the harness then killed. Both must count as progress; a message a
// live worker keeps nacking, or one nobody pushes any more, must still stall the run.
import { describe, expect, it } from "vitest";
import { DeliveryProgress } from "../../functional/progress.js";
import type { Delivery } from "../../functional/records.js";

const STALL_MS = 45_000;
const SUB = "steps-datastore-sub";
const PHASE = ["1", "2", "3050"].map((id) => `${SUB}/${id}`);

function push(
  messageId: string,
  status: number,
  t: number,
  extra: Partial<Delivery> = {},
): Delivery {
  return {
    scenario: "steps-datastore",
    subscription: SUB,
    messageId,
    worker: 0,
    status,
    answered: true,
    startedAt: t - 50,
    t,
    ...extra,
  };
}

describe("DeliveryProgress", () => {
  it("counts an ack recorded after the last read, before deciding on a stall", () => {
    const deliveries: Delivery[] = [push("1", 204, 1_000), push("2", 503, 2_000)];
    const progress = new DeliveryProgress(deliveries);
    progress.read();
    expect(progress.isAcked(SUB, "2")).toBe(false);
    // The 204 lands while the run waits; the next decision must see it.
    deliveries.push(push("2", 204, 46_000));
    expect(progress.silentFor(46_100, 0, PHASE)).toBe(100);
    expect(progress.isAcked(SUB, "2")).toBe(true);
  });

  it("is not stalled while each push of a message meets a worker killed under it (502)", () => {
    const deliveries: Delivery[] = [push("1", 204, 1_000)];
    const progress = new DeliveryProgress(deliveries);
    for (let t = 10_000; t <= 100_000; t += 10_000) {
      deliveries.push(push("3050", 502, t, t % 20_000 === 0 ? { repushed: true } : {}));
      expect(progress.silentFor(t + 5_000, 0, PHASE)).toBeLessThan(STALL_MS);
    }
  });

  it("control: stalls on a message live workers keep nacking, pushed or re-pushed every 10 s", () => {
    const deliveries: Delivery[] = [push("1", 204, 1_000)];
    const progress = new DeliveryProgress(deliveries);
    for (let t = 10_000; t <= 60_000; t += 10_000)
      deliveries.push(push("3050", t % 20_000 === 0 ? 500 : 503, t, { repushed: t > 30_000 }));
    expect(progress.silentFor(1_000 + STALL_MS + 1, 0, PHASE)).toBeGreaterThan(STALL_MS);
    expect(progress.isAcked(SUB, "3050")).toBe(false);
  });

  it("control: redeliveries of an acked message and unanswered copies are no progress", () => {
    const deliveries: Delivery[] = [push("1", 204, 1_000), push("2", 503, 2_000)];
    const progress = new DeliveryProgress(deliveries);
    deliveries.push(push("1", 204, 30_000), push("2", 502, 40_000, { answered: false }));
    expect(progress.silentFor(1_000 + STALL_MS + 1, 0, PHASE)).toBeGreaterThan(STALL_MS);
  });

  it("judges a phase by its own messages, from its start", () => {
    // An earlier phase's straggler, still being cut by kills, is not this phase's progress.
    const deliveries: Delivery[] = [push("old", 502, 195_000)];
    const progress = new DeliveryProgress(deliveries);
    expect(progress.silentFor(200_000, 190_000, PHASE)).toBe(10_000);
    expect(progress.silentFor(200_000, 190_000, [...PHASE, `${SUB}/old`])).toBe(5_000);
  });
});
