// What the soak asserts once warmed up: nothing the server holds grows with the number of
// deliveries. Each bound is relative to the reading at the end of the warm-up, with an
// absolute slack for the noise of a busy two-core machine; docs/soak.md states them.
import type { Reading } from "./measure.js";

/** One interval: what the load process timed, and the server's reading at its end. */
export interface Sample extends Reading {
  readonly pushes: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly rate: number;
  /** Server CPU per push over the interval, µs: steadier than the rate on a busy machine. */
  readonly cpuUsPerPush: number;
  /** Records under the soak's prefix in Redis (they expire after the ttl). */
  readonly storedKeys: number;
}

export const BOUNDS = {
  /** Heap after gc: at most 10 % above the warm-up level, plus 4 MiB. */
  heapFactor: 1.1,
  heapSlackMiB: 4,
  /**
   * Heap growth per push, in each half of the readings after the warm-up: the median of the
   * slopes between every two readings of the half (Theil–Sen: a noisy reading moves it
   * little). A leak grows in both halves; V8 settling in one step (code, a table that doubles)
   * raises one half only, and passes. In the CI form, 11 flat runs (quiet, and at a load of
   * 3) measured 0 to 12 bytes per push in the first half and 0 to 6 in the second; with an
   * unbounded Map of message ids added (its table doubles in steps), 82 to 91, then 29 to 35.
   */
  heapBytesPerPush: 15,
  /** RSS: at most 25 % above the warm-up level, plus 32 MiB (V8 keeps freed pages a while). */
  rssFactor: 1.25,
  rssSlackMiB: 32,
  /**
   * Active resources at rest, the load's connections aside: at most 2 more than after the
   * warm-up (a timer in passing). The connections: at most the load agent's maxSockets.
   */
  handleSlack: 2,
  /**
   * Server CPU per push: the median of the last third of the measured intervals within 2.5×
   * the first third's. CPU time follows the neighbours' load less than wall time does (in a
   * passing 1M run at a load of 8 to 12: 1.9× between single intervals, 1.3× between the
   * thirds), so this is the tighter check that a delivery's cost does not grow.
   */
  cpuFactor: 2.5,
  /**
   * p99, the same thirds: within 5× + 20 ms. Loose, as wall-clock latency on two shared cores
   * follows the neighbours' load (the same run: 5× between single intervals, 1.2× between the
   * thirds); latency that grows with the deliveries still breaks it.
   */
  p99Factor: 5,
  p99SlackMs: 20,
} as const;

/** The share of the intervals that warm up (JIT, pools, the verifier's token cache). */
export const WARM_UP_SHARE = 0.2;

/** How many intervals warm up: a fifth, at least one, leaving at least two measured. */
export function warmUpIntervals(intervals: number): number {
  return Math.max(1, Math.min(intervals - 2, Math.ceil(intervals * WARM_UP_SHARE)));
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/** Bytes of heap per push: the median slope between every two readings (Theil–Sen). */
export function heapGrowthPerPush(readings: readonly Sample[]): number {
  const slopes: number[] = [];
  for (let i = 0; i < readings.length; i += 1) {
    for (let j = i + 1; j < readings.length; j += 1) {
      const a = readings[i]!;
      const b = readings[j]!;
      if (b.pushes > a.pushes) slopes.push(((b.heapMiB - a.heapMiB) * MIB) / (b.pushes - a.pushes));
    }
  }
  return median(slopes);
}

const MIB = 1024 * 1024;
const mib = (n: number) => `${n.toFixed(1)} MiB`;

/** Every bound broken, each as one line; empty when the soak passed. */
export function judge(samples: readonly Sample[], warmUp: number, maxSockets: number): string[] {
  const base = samples[warmUp - 1];
  const after = samples.slice(warmUp);
  if (base === undefined || after.length < 2) {
    return [`too few intervals to judge: ${samples.length} (warm-up ${warmUp}); lower --interval`];
  }
  const broken: string[] = [];
  // Each bound once: its first breach, and how many readings after the warm-up broke it.
  const check = (over: (s: Sample) => boolean, value: (s: Sample) => string, bound: string) => {
    const breaches = after.filter(over);
    const first = breaches[0];
    const last = breaches.at(-1);
    if (first === undefined || last === undefined) return;
    const more =
      breaches.length === 1
        ? ""
        : `; ${breaches.length} of ${after.length} readings, the last ${value(last)} after ${last.pushes}`;
    broken.push(`${value(first)} after ${first.pushes} pushes: above ${bound}${more}`);
  };
  const heapMax = base.heapMiB * BOUNDS.heapFactor + BOUNDS.heapSlackMiB;
  check(
    (s) => s.heapMiB > heapMax,
    (s) => `heap ${mib(s.heapMiB)}`,
    `${mib(heapMax)} (warm-up ${mib(base.heapMiB)} × ${BOUNDS.heapFactor} + ${BOUNDS.heapSlackMiB} MiB)`,
  );
  const half = Math.ceil(after.length / 2);
  const halves = [after.slice(0, half), after.slice(half)].filter((h) => h.length >= 2);
  const growths = halves.map(heapGrowthPerPush);
  if (halves.length === 2 && growths.every((g) => g > BOUNDS.heapBytesPerPush)) {
    const first = after[0]!;
    const last = after.at(-1)!;
    const [early, late] = growths.map((g) => g.toFixed(0));
    broken.push(
      `heap grows ${early} then ${late} bytes per push (${mib(first.heapMiB)} after ${first.pushes} pushes, ${mib(last.heapMiB)} after ${last.pushes}; the median slope between readings, in each half): above ${BOUNDS.heapBytesPerPush} bytes per push in both`,
    );
  }
  const rssMax = base.rssMiB * BOUNDS.rssFactor + BOUNDS.rssSlackMiB;
  check(
    (s) => s.rssMiB > rssMax,
    (s) => `RSS ${mib(s.rssMiB)}`,
    `${mib(rssMax)} (warm-up ${mib(base.rssMiB)} × ${BOUNDS.rssFactor} + ${BOUNDS.rssSlackMiB} MiB)`,
  );
  const handleMax = base.handles + BOUNDS.handleSlack;
  check(
    (s) => s.handles > handleMax,
    (s) => `${s.handles} active resources ${JSON.stringify(s.handleTypes)}`,
    `${handleMax} (warm-up ${base.handles} + ${BOUNDS.handleSlack}), the load's connections apart`,
  );
  check(
    (s) => s.connections > maxSockets,
    (s) => `${s.connections} open connections`,
    `${maxSockets}, the most the load opens`,
  );
  const third = Math.max(1, Math.floor(after.length / 3));
  const thirds = (of: (s: Sample) => number) => ({
    early: median(after.slice(0, third).map(of)),
    late: median(after.slice(-third).map(of)),
  });
  const cpu = thirds((s) => s.cpuUsPerPush);
  if (cpu.late > cpu.early * BOUNDS.cpuFactor) {
    broken.push(
      `server CPU per push rose to ${cpu.late.toFixed(0)} µs (median of the last ${third} intervals): above the first ${third}'s ${cpu.early.toFixed(0)} µs × ${BOUNDS.cpuFactor}`,
    );
  }
  const p99 = thirds((s) => s.p99Ms);
  const p99Max = p99.early * BOUNDS.p99Factor + BOUNDS.p99SlackMs;
  if (p99.late > p99Max) {
    broken.push(
      `p99 rose to ${p99.late.toFixed(1)} ms (median of the last ${third} intervals): above ${p99Max.toFixed(1)} ms (the first ${third}'s ${p99.early.toFixed(1)} ms × ${BOUNDS.p99Factor} + ${BOUNDS.p99SlackMs} ms)`,
    );
  }
  return broken;
}
