/**
 * The one measuring loop every backend goes through: N workers loop over an operation for a
 * fixed time, every latency kept; cells are split into rounds with the contenders interleaved
 * inside each round, so a burst of load from elsewhere on the machine lands on all of them.
 * Beside throughput, each round records the CPU time the client process and (where the
 * backend can read it) the server spent, per operation: on two shared cores that figure
 * holds still where ops/s does not.
 */
import { readdirSync, readFileSync } from "node:fs";
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
    rounds: 5,
    warmupMs: 150,
    roundMs: 700,
    dupKeys: 1_000,
    scaleSizes: [1_000, 100_000, 1_000_000],
    gatewayCycles: 2_000_000,
  },
  quick: {
    size: "quick",
    concurrency: [1, 16, 64],
    rounds: 3,
    warmupMs: 40,
    roundMs: 150,
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

/** Cumulative CPU time of the server process(es), in µs; undefined when it cannot be read. */
export type ServerCpu = () => Promise<number | undefined>;

export interface Sample {
  /** Latencies in ms. */
  latencies: number[];
  seconds: number;
  /** CPU time of this (client) process during the timed part, µs. */
  clientCpuUs: number;
  /** CPU time of the server during the timed part, µs, where the backend can read it. */
  serverCpuUs?: number;
}

export interface Result {
  opsPerSec: number;
  /** ms */
  p50: number;
  /** ms */
  p99: number;
  ops: number;
  /** ops/s of each timed round, in round order: a ratio is taken round by round. */
  rounds: number[];
  /** Client CPU µs per operation of each round. */
  clientCpu: number[];
  /** Server CPU µs per operation of each round, where measured. */
  serverCpu?: number[];
}

/** A ratio taken round by round (each round's two cells ran back to back), summarized. */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

export function spread(values: readonly number[]): Spread | undefined {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  const mid = v.length >> 1;
  const median = v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
  return { median, min: v[0]!, max: v.at(-1)! };
}

/** `a[k] / b[k]` for each round both have. */
export function pairedRatios(a: readonly number[], b: readonly number[]): number[] {
  const n = Math.min(a.length, b.length);
  const out: number[] = [];
  for (let k = 0; k < n; k++) if (b[k]! > 0) out.push(a[k]! / b[k]!);
  return out;
}

/** Relative half-width of a spread around its median: ±10 % is 0.1. */
export function halfWidth(s: Spread): number {
  return s.median > 0 ? Math.max(s.max - s.median, s.median - s.min) / s.median : 0;
}

/** One sequence for the whole run, so no two operations anywhere share a fresh key. */
let sequence = 0;

export async function drive(
  op: Op,
  concurrency: number,
  ms: number,
  serverCpu?: ServerCpu,
): Promise<Sample> {
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
  const server0 = await serverCpu?.();
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const server1 = server0 === undefined ? undefined : await serverCpu?.();
  return {
    latencies,
    seconds,
    clientCpuUs: cpu.user + cpu.system,
    ...(server0 !== undefined && server1 !== undefined ? { serverCpuUs: server1 - server0 } : {}),
  };
}

export function summarize(samples: readonly Sample[]): Result {
  const latencies = samples.flatMap((s) => s.latencies).sort((a, b) => a - b);
  const seconds = samples.reduce((sum, s) => sum + s.seconds, 0);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  const perOp = (us: number, s: Sample) => (s.latencies.length > 0 ? us / s.latencies.length : 0);
  const server = samples.every((s) => s.serverCpuUs !== undefined)
    ? samples.map((s) => perOp(s.serverCpuUs ?? 0, s))
    : undefined;
  return {
    opsPerSec: seconds > 0 ? latencies.length / seconds : 0,
    p50: at(0.5),
    p99: at(0.99),
    ops: latencies.length,
    rounds: samples.map((s) => (s.seconds > 0 ? s.latencies.length / s.seconds : 0)),
    clientCpu: samples.map((s) => perOp(s.clientCpuUs, s)),
    ...(server && samples.length > 0 ? { serverCpu: server } : {}),
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
  serverCpu?: ServerCpu,
): Promise<Map<string, Result>> {
  const samples = new Map<string, Sample[]>(ops.map(([name]) => [name, []]));
  for (let round = 0; round < settings.rounds; round++) {
    // Alternate the order each round, so no contender always runs right after another's
    // burst (a server flushing, a GC pause left behind).
    const order = round % 2 === 0 ? ops : [...ops].reverse();
    for (const [name, op] of order) {
      await drive(op, concurrency, settings.warmupMs);
      samples.get(name)?.push(await drive(op, concurrency, settings.roundMs, serverCpu));
    }
  }
  return new Map([...samples].map(([name, s]) => [name, summarize(s)]));
}

/**
 * Cumulative CPU µs of every process whose command name is one of `names` (redis-server,
 * postgres, mariadbd), from /proc: utime + stime in clock ticks. Undefined off Linux or when
 * no such process is visible. Ticks are 10 ms; a timed round of hundreds of ms over
 * thousands of operations keeps the per-operation figure meaningful. A process that exits
 * keeps counting with the last time read from it, so the total never falls (a PostgreSQL
 * backend of another client ending mid-round once made a round's server CPU negative).
 */
export function processCpu(names: readonly string[]): ServerCpu {
  const tickUs = 1e6 / 100;
  const last = new Map<string, number>();
  return async () => {
    let pids: string[];
    try {
      pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
    } catch {
      return undefined;
    }
    for (const pid of pids) {
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      } catch {
        continue; // gone between the listing and the read
      }
      const open = stat.indexOf("(");
      const close = stat.lastIndexOf(")");
      if (open < 0 || close < 0 || !names.includes(stat.slice(open + 1, close))) continue;
      const fields = stat.slice(close + 2).split(" ");
      // After the command: state is field 3, utime field 14, stime field 15 (1-based); the
      // start time (field 22) tells a reused pid from the process read before.
      last.set(`${pid}@${fields[19]}`, (Number(fields[11]) + Number(fields[12])) * tickUs);
    }
    if (last.size === 0) return undefined;
    let total = 0;
    for (const us of last.values()) total += us;
    return total;
  };
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
