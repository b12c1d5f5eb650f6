/**
 * The once() cell's reading: once ÷ lock in time per operation round by round, judged by the
 * one spread rule against 1.1× on Redis and PostgreSQL; the result it replays stays within
 * 1 KiB; the report prints the section and the target row.
 */
import { describe, expect, it } from "vitest";
import { RESULT_JSON_BYTES, resultFor } from "../../bench/once.js";
import {
  clientCpuRatio,
  type OnceCell,
  type OnceRun,
  onceSection,
  onceTarget,
  timeRatio,
} from "../../bench/once-report.js";
import { type RunResult, renderMarkdown, targets } from "../../bench/report.js";
import { type Result, SETTINGS } from "../../bench/runner.js";

/** A result whose rounds ran at `rates` ops/s, with CPU µs per operation of 1e6 / rate. */
const result = (rates: number[], serverCpu?: number[]): Result => ({
  opsPerSec: rates.reduce((a, b) => a + b, 0) / rates.length,
  p50: 1,
  p99: 2,
  ops: 1_000,
  rounds: rates,
  clientCpu: rates.map((r) => 1e6 / r),
  ...(serverCpu ? { serverCpu } : {}),
});

const cell = (store: string, once: number[], lock: number[], inFlight = 16): OnceCell => ({
  store,
  inFlight,
  once: result(
    once,
    once.map(() => 20),
  ),
  lock: result(
    lock,
    lock.map(() => 10),
  ),
});

const run = (cells: OnceCell[]): OnceRun => ({
  settings: SETTINGS.quick,
  resultBytes: 1_002,
  loadAtStart: "0.50 0.40 0.30",
  loadAtEnd: "0.60 0.40 0.30",
  stores: ["memory", "redis", "postgres"].map((id) => ({
    id,
    title: id,
    versions: `${id} 1.0`,
    cells: cells.filter((c) => c.store === id),
  })),
});

describe("the once() cell's ratio", () => {
  it("is once's time per operation over lock's: lock's ops/s ÷ once's, round by round", () => {
    const c = cell("redis", [100, 50, 80], [110, 100, 80]);
    expect(timeRatio(c)).toEqual({ min: 1, median: 1.1, max: 2 });
    expect(clientCpuRatio(c)).toEqual({ min: 1, median: 1.1, max: 2 });
  });

  it("meets the target only when both stores' whole spreads are within 1.1×", () => {
    const met = onceTarget(
      run([cell("redis", [100, 100, 100], [105, 100, 95]), cell("postgres", [90, 90], [95, 99])]),
    );
    expect(met.met).toBe(true);
    expect(met.measured).toBe("redis 1.00× [0.95–1.05], postgres 1.08× [1.06–1.10]");
    const straddles = onceTarget(
      run([cell("redis", [100, 100], [105, 120]), cell("postgres", [100], [100])]),
    );
    expect(straddles).toMatchObject({ met: undefined, straddles: true });
    const missed = onceTarget(run([cell("redis", [50, 60], [100, 100])]));
    expect(missed.met).toBe(false);
    // Its cause: the run's own CPU per operation of both, then what would be needed.
    expect(missed.cause).toContain("redis client 18333 vs 10000, server 20.0 vs 10.0");
    expect(missed.cause).toContain("Needed:");
    expect(met.cause).toBeUndefined();
  });

  it("is not met with a store missing, and not measured without a run", () => {
    expect(onceTarget(run([cell("redis", [100], [100])])).met).toBeUndefined();
    expect(onceTarget(undefined)).toMatchObject({ measured: "—", met: undefined });
    // Another in-flight count than 16 is shown in the section, not judged.
    expect(onceTarget(run([cell("redis", [100], [100], 1)])).measured).toBe("—");
  });
});

describe("the once() cell's result", () => {
  it("is 1,000 bytes of JSON (1,002 recorded with its marker), its own order id per key", () => {
    for (const i of [0, 7, 999_999]) {
      const text = JSON.stringify(resultFor(i));
      expect(new TextEncoder().encode(text).length).toBe(RESULT_JSON_BYTES);
    }
    expect(RESULT_JSON_BYTES + 2).toBeLessThanOrEqual(1024);
    expect(resultFor(7).orderId).toBe("order-000007");
  });
});

describe("the report", () => {
  it("prints each cell with its ratios, the failures, and the target row", () => {
    const r = run([cell("redis", [100, 100], [105, 95])]);
    r.stores[2]!.error = "SqlLock does not store results yet";
    r.stores[2]!.versions = "";
    const text = onceSection(r).join("\n");
    expect(text).toContain("| redis | 16 | 100 |");
    expect(text).toContain("| 1.00× [0.95–1.05] |");
    expect(text).toContain("20.0 vs 10.0 | 2.00× |");
    expect(text).toContain("- **postgres failed:** SqlLock does not store results yet");
    const full: RunResult = {
      settings: SETTINGS.quick,
      command: "npm run bench -- --only once",
      provenance: { commit: "abc", changes: [] },
      date: "2026-12-05T00:00:00Z",
      machine: "test",
      node: "v20",
      loadAtStart: "",
      loadAtEnd: "",
      seconds: 1,
      backends: [],
      scales: [],
      scaleErrors: [],
      charts: {},
      once: r,
    };
    expect(targets(full).some((t) => t.what.startsWith("once() duplicate (a 1,002-byte"))).toBe(
      true,
    );
    expect(renderMarkdown(full)).toContain("## once() against lock() on a duplicate");
  });
});
