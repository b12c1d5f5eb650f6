import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ledger } from "../../functional/ledger.js";
import type { WorkerEvent } from "../../functional/records.js";

const KEY = "crash-storm/order:s-0001";
const ORDER = "crash-storm/s-0001";

/** One delivery's events as a worker writes them: won, body, sending, then how it ended. */
function delivery(
  pid: number,
  fence: number,
  end: "completed" | "release" | "fenced_out" | "none",
): WorkerEvent[] {
  const e = (kind: WorkerEvent["kind"], extra: Partial<WorkerEvent> = {}): WorkerEvent => ({
    worker: `w${pid}`,
    pid,
    t: fence,
    kind,
    key: KEY,
    ...extra,
  });
  const events = [e("won", { fence }), e("body"), e("sending", { order: ORDER })];
  if (end === "completed") events.push(e("supplied"), e("completed", { fence }));
  if (end === "release") events.push(e("failed"), e("release", { fence }));
  if (end === "fenced_out") events.push(e("supplied"), e("fenced_out"));
  return events;
}

const books = (events: WorkerEvent[], arrivals: number, dead: number[] = []) =>
  ledger({ events, arrivals: new Map([[ORDER, arrivals]]), deadPids: new Set(dead) });

describe("the functional storm's ledger", () => {
  it("passes one run, one send, one completion", () => {
    const b = books(delivery(1, 10, "completed"), 1);
    expect(b.violations).toEqual([]);
    expect(b.reclaimsAfterLapse + b.reclaimsAfterRelease).toBe(0);
  });

  it("explains a re-send by the holder's death between send and complete", () => {
    const b = books([...delivery(1, 10, "none"), ...delivery(2, 20, "completed")], 2, [1]);
    expect(b.violations).toEqual([]);
    expect(b.sendsAbandoned).toBe(1);
    expect(b.ordersResentAfterCrash).toBe(1);
    expect(b.reclaimsAfterLapse).toBe(1);
  });

  it("explains a re-send by a failure that released the key", () => {
    const b = books([...delivery(1, 10, "release"), ...delivery(2, 20, "completed")], 2);
    expect(b.violations).toEqual([]);
    expect(b.reclaimsAfterRelease).toBe(1);
    expect(b.reclaimsAfterLapse).toBe(0);
  });

  it("fails two completed runs of one key, as a lock that excludes nothing gives", () => {
    const b = books([...delivery(1, 10, "completed"), ...delivery(2, 20, "completed")], 2);
    expect(b.violations.join("\n")).toMatch(/ran 2 times without a crash/);
    expect(b.violations.join("\n")).toMatch(/reached the supplier 2 times; only 0/);
  });

  it("fails a double send whose first holder did not die (still open)", () => {
    const b = books([...delivery(1, 10, "none"), ...delivery(2, 20, "completed")], 2);
    expect(b.violations.length).toBeGreaterThan(0);
  });

  it("fails a fenced-out holder's send (it outran its lease), unless its writes roll back", () => {
    const events = [...delivery(1, 10, "fenced_out"), ...delivery(2, 20, "completed")];
    expect(books(events, 2).violations.length).toBeGreaterThan(0);
    const rolledBack = ledger({
      events,
      arrivals: new Map(),
      deadPids: new Set(),
      fencedRunsRollBack: true,
    });
    expect(rolledBack.violations).toEqual([]);
  });

  it("fails more arrivals than sends recorded", () => {
    const b = books(delivery(1, 10, "completed"), 2);
    expect(b.violations.join("\n")).toMatch(/2 arrivals at the supplier, 1 sends recorded/);
  });

  it("fails two wins with one fence", () => {
    const b = books([...delivery(1, 10, "none"), ...delivery(2, 10, "completed")], 2, [1]);
    expect(b.violations.join("\n")).toMatch(/two wins with fence 10/);
  });

  it("holds for any interleaving of crashed deliveries then one completion (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 6 }), fc.boolean(), (crashed, lastArrives) => {
        const events: WorkerEvent[] = [];
        for (let i = 0; i < crashed; i++) events.push(...delivery(i + 1, (i + 1) * 10, "none"));
        events.push(...delivery(100, 1_000, "completed"));
        const dead = Array.from({ length: crashed }, (_, i) => i + 1);
        // A crashed send may or may not have reached the supplier before the worker died.
        const arrivals = crashed + (lastArrives ? 1 : 0);
        const b = books(events, Math.max(1, arrivals), dead);
        expect(b.violations).toEqual([]);
        expect(b.reclaimsAfterLapse).toBe(crashed);
        // One more arrival than the crashes explain is always caught.
        expect(books(events, crashed + 2, dead).violations.length).toBeGreaterThan(0);
      }),
    );
  });
});
