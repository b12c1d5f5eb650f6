/**
 * The one measuring loop every backend goes through: N workers loop over an operation for a
 * fixed time, every latency kept; cells are split into rounds with the contenders interleaved
 * inside each round, so a burst of load from elsewhere on the machine lands on all of them.
 */
import os from "node:os";

export interface Settings {
  /** Name of the size, printed in the report. */
  size: "full" | "quick" | "smoke";
  concurrency: readonly number[];
  rounds: number;
  /** Warm-up before each timed round of each contender. */
  warmupMs: number;
  /** Timed part of one round. */
  roundMs: number;
  /** Done keys the duplicate path cycles over. */
  dupKeys: number;
  /** Stored keys for the scale runs, smallest first. */
  scaleSizes: readonly number[];
  /** lock() cycles for the gateway figure. */
  gatewayCycles: number;
}

export const SETTINGS: Record<Settings["size"], Settings> = {
  full: {
    size: "full",
    concurrency: [1, 16, 64],
    rounds: 3,
    warmupMs: 150,
    roundMs: 400,
    dupKeys: 1_000,
    scaleSizes: [1_000, 100_000, 1_000_000],
    gatewayCycles: 2_000_000,
  },
  quick: {
    size: "quick",
    concurrency: [1, 16, 64],
    rounds: 1,
    warmupMs: 40,
    roundMs: 120,
    dupKeys: 200,
    scaleSizes: [1_000, 100_000, 1_000_000],
    gatewayCycles: 300_000,
  },
  smoke: {
    size: "smoke",
    concurrency: [1, 16],
    rounds: 1,
    warmupMs: 5,
    roundMs: 25,
    dupKeys: 20,
    scaleSizes: [100, 1_000],
    gatewayCycles: 5_000,
  },
};

/** `worker` is 0…concurrency-1, so a path can give each worker a key of its own. */
export type Op = (i: number, worker: number) => Promise<unknown>;

export interface Sample {
  /** Latencies in ms. */
  latencies: number[];
  seconds: number;
}

export interface Result {
  opsPerSec: number;
  /** ms */
  p50: number;
  /** ms */
  p99: number;
  ops: number;
}

/** One sequence for the whole run, so no two operations anywhere share a fresh key. */
let sequence = 0;

export async function drive(op: Op, concurrency: number, ms: number): Promise<Sample> {
  const latencies: number[] = [];
  const deadline = process.hrtime.bigint() + BigInt(Math.round(ms * 1e6));
  const worker = async (w: number) => {
    for (;;) {
      const start = process.hrtime.bigint();
      if (start >= deadline) return;
      await op(sequence++, w);
      latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  return { latencies, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
}

export function summarize(samples: readonly Sample[]): Result {
  const latencies = samples.flatMap((s) => s.latencies).sort((a, b) => a - b);
  const seconds = samples.reduce((sum, s) => sum + s.seconds, 0);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    opsPerSec: seconds > 0 ? latencies.length / seconds : 0,
    p50: at(0.5),
    p99: at(0.99),
    ops: latencies.length,
  };
}

/**
 * Measure several operations at one concurrency, interleaved round by round; each round
 * warms the operation up first (pools, JIT, server caches) and then times it.
 */
export async function interleaved(
  settings: Settings,
  ops: ReadonlyArray<readonly [string, Op]>,
  concurrency: number,
): Promise<Map<string, Result>> {
  const samples = new Map<string, Sample[]>(ops.map(([name]) => [name, []]));
  for (let round = 0; round < settings.rounds; round++) {
    for (const [name, op] of ops) {
      await drive(op, concurrency, settings.warmupMs);
      samples.get(name)?.push(await drive(op, concurrency, settings.roundMs));
    }
  }
  return new Map([...samples].map(([name, s]) => [name, summarize(s)]));
}

export function loadAverage(): string {
  return os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");
}

const startedAt = Date.now();
/** A progress line on stderr, with the time since the run began. */
export function progress(line: string): void {
  const s = Math.round((Date.now() - startedAt) / 1000);
  process.stderr.write(
    `[${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}] ${line}\n`,
  );
}

export function fmtRate(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

export function fmtMs(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}
