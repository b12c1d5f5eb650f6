/**
 * The soak's verdict (bench/soak/bounds.ts): flat readings pass, and each kind of growth the
 * soak watches for is named. The soak itself runs in CI (`npm run soak -- --pushes 60000`).
 */
import { describe, expect, it } from "vitest";
import { heapGrowthPerPush, judge, type Sample, warmUpIntervals } from "../../bench/soak/bounds.js";

const MAX_SOCKETS = 64;

/** Twenty readings 5,000 pushes apart, flat unless `change` says otherwise. */
function samples(change: (k: number) => Partial<Sample> = () => ({})): Sample[] {
  return Array.from({ length: 20 }, (_, k) => ({
    pushes: (k + 1) * 5_000,
    heapMiB: 13,
    rssMiB: 130,
    handles: 3,
    handleTypes: { TCPServerWrap: 1, TCPSocketWrap: 1, PipeWrap: 1 },
    connections: 38,
    cpuUs: 1e6,
    p50Ms: 10,
    p99Ms: 40 + (k % 3) * 20,
    rate: 2_500,
    cpuUsPerPush: 200,
    storedKeys: 20_000,
    ...change(k),
  }));
}

describe("judge", () => {
  const warmUp = warmUpIntervals(20);

  it("warms up a fifth of the intervals, leaving two to judge at least", () => {
    expect(warmUp).toBe(4);
    expect(warmUpIntervals(3)).toBe(1);
  });

  it("passes flat readings, noise within the slack included", () => {
    const noisy = samples((k) => ({ heapMiB: 13 + (k % 2) * 3, rssMiB: 130 + (k % 4) * 10 }));
    expect(judge(noisy, warmUp, MAX_SOCKETS)).toEqual([]);
  });

  it("names a heap that grows with the deliveries", () => {
    const broken = judge(
      samples((k) => ({ heapMiB: 13 + k })),
      warmUp,
      MAX_SOCKETS,
    );
    expect(broken[0]).toMatch(
      /^heap 22\.0 MiB after 50000 pushes: above 21\.6 MiB \(warm-up 16\.0 MiB/,
    );
  });

  it("names a heap that grows 55 bytes a push, inside the heap bound (the CI form's blind spot)", () => {
    // An unbounded Map of message ids measured about 55 bytes per push: under 4 MiB over the
    // 75,000 pushes after the warm-up, inside the warm-up × 1.1 + 4 MiB every reading is held to.
    const leak = samples((k) => ({ heapMiB: 13 + (k * 5_000 * 55) / 2 ** 20 }));
    const broken = judge(leak, warmUp, MAX_SOCKETS);
    expect(broken).toHaveLength(1);
    expect(broken[0]).toMatch(
      /^heap grows 55 then 55 bytes per push \(14\.0 MiB after 25000 pushes, /,
    );
    expect(broken[0]).toMatch(/: above 15 bytes per push in both$/);
  });

  it("passes a heap that settles in one step of 3 MiB, or rises 7 bytes a push", () => {
    const step = samples((k) => ({ heapMiB: k < 12 ? 13.4 : 16.4 }));
    expect(heapGrowthPerPush(step.slice(warmUp))).toBeGreaterThan(15);
    expect(judge(step, warmUp, MAX_SOCKETS)).toEqual([]);
    const slow = samples((k) => ({ heapMiB: 13.4 + (k * 5_000 * 7) / 2 ** 20 }));
    expect(judge(slow, warmUp, MAX_SOCKETS)).toEqual([]);
  });

  it("names RSS, active resources and connections that grow", () => {
    const broken = judge(
      samples((k) => ({ rssMiB: 130 + k * 10, handles: 3 + k, connections: 38 + k * 2 })),
      warmUp,
      MAX_SOCKETS,
    );
    expect(broken.some((line) => line.startsWith("RSS "))).toBe(true);
    expect(
      broken.some((line) =>
        /^\d+ active resources \{.*\} after \d+ pushes: above 8 \(warm-up 6 \+ 2\)/.test(line),
      ),
    ).toBe(true);
    expect(broken.some((line) => / open connections after /.test(line))).toBe(true);
  });

  it("names a p99 that trends up, not one slow interval", () => {
    expect(
      judge(
        samples((k) => ({ p99Ms: k === 12 ? 900 : 40 })),
        warmUp,
        MAX_SOCKETS,
      ),
    ).toEqual([]);
    const rising = judge(
      samples((k) => ({ p99Ms: 40 * 1.3 ** k })),
      warmUp,
      MAX_SOCKETS,
    );
    expect(rising).toHaveLength(1);
    expect(rising[0]).toMatch(/^p99 rose to /);
  });

  it("names a CPU cost per push that trends up", () => {
    const rising = judge(
      samples((k) => ({ cpuUsPerPush: 200 + k * k * 10 })),
      warmUp,
      MAX_SOCKETS,
    );
    expect(rising).toEqual([expect.stringMatching(/^server CPU per push rose to 3090 µs/)]);
  });

  it("refuses to judge too few intervals", () => {
    expect(judge(samples().slice(0, 3), 2, MAX_SOCKETS)[0]).toMatch(/^too few intervals/);
  });
});
