/**
 * The once() cell's figures and how they read (pure: the timing is bench/once.ts's): a
 * duplicate through `once()`, which reads the recorded result back and decodes it, against a
 * duplicate through `lock()`, which rejects `Duplicate`, on the same store in the same run.
 * The ratio read is once ÷ lock in time per operation (lock's ops/s ÷ once's, round by round),
 * judged by the report's one spread rule against the target of 1.1×.
 */
import { fmtSpread, spreadTarget, type Target } from "./report.js";
import {
  fmtMs,
  fmtRate,
  pairedRatios,
  type Result,
  type Settings,
  type Spread,
  spread,
} from "./runner.js";

/** The bound of the target: a once() duplicate costs at most this many lock() duplicates. */
export const ONCE_BOUND = 1.1;
/** The in-flight count the target is judged at, as every other target of the table. */
export const ONCE_TARGET_IN_FLIGHT = 16;
/** The stores the target names; others (InMemoryLock) are shown, not judged. */
export const ONCE_TARGET_STORES = ["redis", "postgres"] as const;

/** One store at one in-flight count: both contenders' results, interleaved round by round. */
export interface OnceCell {
  store: string;
  inFlight: number;
  once: Result;
  lock: Result;
}

/** A store's run: what it ran on, its cells, or why it failed. */
export interface OnceStore {
  id: string;
  title: string;
  versions: string;
  cells: OnceCell[];
  error?: string;
}

export interface OnceRun {
  /** The settings the cells ran with (rounds doubled in a full run). */
  settings: Settings;
  /** The encoded result's size, UTF-8 bytes, marker included: what each duplicate reads. */
  resultBytes: number;
  loadAtStart: string;
  loadAtEnd: string;
  stores: OnceStore[];
}

/** once ÷ lock in time per operation, round by round: lock's ops/s ÷ once's. */
export const timeRatio = (c: OnceCell): Spread | undefined =>
  spread(pairedRatios(c.lock.rounds, c.once.rounds));

/** once ÷ lock in client CPU per operation, round by round. */
export const clientCpuRatio = (c: OnceCell): Spread | undefined =>
  spread(pairedRatios(c.once.clientCpu, c.lock.clientCpu));

/** once ÷ lock in server CPU per operation, round by round, where measured. */
export const serverCpuRatio = (c: OnceCell): Spread | undefined =>
  c.once.serverCpu && c.lock.serverCpu
    ? spread(pairedRatios(c.once.serverCpu, c.lock.serverCpu))
    : undefined;

const cellAt = (run: OnceRun | undefined, store: string, inFlight = ONCE_TARGET_IN_FLIGHT) =>
  run?.stores.find((s) => s.id === store)?.cells.find((c) => c.inFlight === inFlight);

/** The target row: once ÷ lock time per operation ≤ 1.1× on Redis and PostgreSQL, 16 in flight. */
export function onceTarget(run: OnceRun | undefined): Target {
  const what = `once() duplicate (a ${run ? `${run.resultBytes.toLocaleString("en-US")}-byte` : "≤ 1 KiB"} result replayed) within ${ONCE_BOUND}× of a lock() duplicate, Redis and PostgreSQL (once ÷ lock, time per operation, ${ONCE_TARGET_IN_FLIGHT} in flight)`;
  const parts = ONCE_TARGET_STORES.map((id): readonly [string, Spread | undefined] => {
    const c = cellAt(run, id);
    return [id, c && timeRatio(c)];
  });
  const target = spreadTarget(what, parts, ONCE_BOUND, "atMost");
  return target.met === true || target.measured === "—"
    ? target
    : { ...target, cause: onceCause(run!) };
}

/**
 * Where the target is not met: CPU per operation of both at 16 in flight, from this run; the
 * InMemoryLock cell (no I/O) is the library's own share.
 */
function onceCause(run: OnceRun): string {
  const sides = (id: string) => {
    const c = cellAt(run, id);
    if (c === undefined) return undefined;
    const title = run.stores.find((x) => x.id === id)?.title ?? id;
    const server = c.once.serverCpu
      ? `, server ${us(median(c.once.serverCpu))} vs ${us(median(c.lock.serverCpu))}`
      : "";
    return `${title} client ${us(median(c.once.clientCpu))} vs ${us(median(c.lock.clientCpu))}${server}`;
  };
  const measured = [...ONCE_TARGET_STORES, "memory"].map(sides).filter(Boolean);
  return [
    `CPU µs per operation at ${ONCE_TARGET_IN_FLIGHT} in flight, once vs lock: ${measured.join("; ")} (InMemoryLock: no I/O, the library's own work).`,
    `What once() adds on a duplicate is its result: ${run.resultBytes.toLocaleString("en-US")} more bytes in the claim's reply, which the store sends and the driver parses, and the JSON decoded on every call; a once() duplicate's own path, with no result to decode, costs no more than lock()'s Duplicate rejection (docs/benchmarks/cited.md).`,
    "Needed: a cheaper decode (a codec that keeps the text, or a smaller result); the claim is the same one round trip.",
  ].join(" ");
}

const us = (n: number | undefined) =>
  n === undefined ? "" : n >= 100 ? n.toFixed(0) : n.toFixed(1);
const median = (values: readonly number[] | undefined) => values && spread(values)?.median;

/** The section of the report: every store and in-flight count, then the reading. */
export function onceSection(run: OnceRun): string[] {
  const s = run.settings;
  const lines = [
    "## once() against lock() on a duplicate",
    "",
    `A key done by \`once()\` with a ${run.resultBytes.toLocaleString("en-US")}-byte result (JSON, the "r:" marker included) called again through \`once()\`, which reads the result back with the claim and decodes it, against a key done by \`lock()\` called again through \`lock()\`, which rejects \`Duplicate\`: the same store and client, each cycling over ${s.dupKeys.toLocaleString("en-US")} done keys of its own, ${s.rounds} round(s) in which the two take turns (the order reversed every other round), ${s.warmupMs} ms warm-up then ${s.roundMs} ms timed each. **once ÷ lock** is the time per operation (lock's ops/s ÷ once's) round by round, median [min–max]; the CPU ratios are per operation, client process and server. Load average ${run.loadAtStart} at the start, ${run.loadAtEnd} at the end.`,
    "",
    "| store | in flight | once ops/s | p50 ms | p99 ms | lock ops/s | p50 ms | p99 ms | once ÷ lock, time/op | client CPU µs/op, once vs lock | ÷ | server CPU µs/op, once vs lock | ÷ |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  ];
  for (const store of run.stores) {
    for (const c of store.cells) {
      const time = timeRatio(c);
      const client = clientCpuRatio(c);
      const server = serverCpuRatio(c);
      lines.push(
        `| ${store.title} | ${c.inFlight} | ${fmtRate(c.once.opsPerSec)} | ${fmtMs(c.once.p50)} | ${fmtMs(c.once.p99)} | ${fmtRate(c.lock.opsPerSec)} | ${fmtMs(c.lock.p50)} | ${fmtMs(c.lock.p99)} | ${time ? fmtSpread(time) : "—"} | ${us(median(c.once.clientCpu))} vs ${us(median(c.lock.clientCpu))} | ${client ? fmtSpread(client) : "—"} | ${c.once.serverCpu ? `${us(median(c.once.serverCpu))} vs ${us(median(c.lock.serverCpu))}` : ""} | ${server ? fmtSpread(server) : ""} |`,
      );
    }
  }
  lines.push("");
  for (const store of run.stores.filter((x) => x.versions)) {
    lines.push(`- ${store.title}: ${store.versions}.`);
  }
  for (const store of run.stores.filter((x) => x.error)) {
    lines.push(`- **${store.title} failed:** ${store.error}`);
  }
  lines.push("");
  return lines;
}
