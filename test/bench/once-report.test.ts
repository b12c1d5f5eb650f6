/**
 * The once() cell's reading: once ÷ lock in time per operation round by round, for the large
 * and the small result, judged by the one spread rule against 1.1× on Redis and PostgreSQL;
 * the results it replays stay within their sizes; the report prints the section (the three
 * contenders, their CPU, the decode alone) and the target row.
 */
import { describe, expect, it } from "vitest";
import {
  clientCpuRatio,
  type OnceCell,
  type OnceRun,
  onceSection,
  onceTarget,
  serverCpuRatio,
  timeRatio,
} from "../../bench/once-report.js";
import {
  decodeBench,
  RESULT_JSON_BYTES,
  recordedJson,
  resultFor,
  SMALL_RESULT_JSON_BYTES,
  smallResultFor,
} from "../../bench/once-results.js";
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

/**
 * A cell whose rounds ran at these ops/s; server CPU 20, 12 and 10 µs per operation. The small
 * result's rounds default to lock's (a ratio of 1).
 */
const cell = (
  store: string,
  once: number[],
  lock: number[],
  inFlight = 16,
  small: number[] = lock,
): OnceCell => ({
  store,
  inFlight,
  once: result(
    once,
    once.map(() => 20),
  ),
  onceSmall: result(
    small,
    small.map(() => 12),
  ),
  lock: result(
    lock,
    lock.map(() => 10),
  ),
  // The opt-ins: fingerprint on a duplicate at half lock's rate; steps on a first delivery at
  // 0.8 of the plain first delivery's.
  lockFingerprint: result(lock.map((r) => r / 2)),
  lockFirst: result(
    lock.map((r) => r / 2),
    lock.map(() => 30),
  ),
  stepsFirst: result(
    lock.map((r) => (r / 2) * 0.8),
    lock.map(() => 30),
  ),
});

const run = (cells: OnceCell[]): OnceRun => ({
  settings: SETTINGS.quick,
  resultBytes: 1_002,
  smallResultBytes: 102,
  decode: {
    roundMs: 75,
    rounds: 3,
    large: { cpuUs: [2.5, 2.4, 3.1], wallUs: [2.6, 2.5, 3.3], calls: [30_000, 31_000, 24_000] },
    small: {
      cpuUs: [0.41, 0.4, 0.52],
      wallUs: [0.43, 0.42, 0.6],
      calls: [180_000, 176_000, 150_000],
    },
  },
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
    const c = cell("redis", [100, 50, 80], [110, 100, 80], 16, [110, 50, 40]);
    expect(timeRatio(c)).toEqual({ min: 1, median: 1.1, max: 2 });
    expect(clientCpuRatio(c)).toEqual({ min: 1, median: 1.1, max: 2 });
    // The small result's contender, against the same lock() rounds.
    expect(timeRatio(c, "onceSmall")).toEqual({ min: 1, median: 2, max: 2 });
    expect(clientCpuRatio(c, "onceSmall")).toEqual({ min: 1, median: 2, max: 2 });
    expect(serverCpuRatio(c)).toEqual({ min: 2, median: 2, max: 2 });
    expect(serverCpuRatio(c, "onceSmall")).toEqual({ min: 1.2, median: 1.2, max: 1.2 });
  });

  it("meets the target only when both stores' whole spreads are within 1.1×, for both results", () => {
    const met = onceTarget(
      run([cell("redis", [100, 100, 100], [105, 100, 95]), cell("postgres", [90, 90], [95, 99])]),
    );
    expect(met.met).toBe(true);
    expect(met.measured).toBe(
      "redis 1,002 B 1.00× [0.95–1.05], redis 102 B 1.00×, postgres 1,002 B 1.08× [1.06–1.10], postgres 102 B 1.00×",
    );
    expect(met.cause).toBeUndefined();
    const straddles = onceTarget(
      run([cell("redis", [100, 100], [105, 120]), cell("postgres", [100], [100])]),
    );
    expect(straddles).toMatchObject({ met: undefined, straddles: true });
    // The large result within the bound, the small one over it: missed all the same.
    const smallMissed = onceTarget(
      run([cell("redis", [100, 100], [100, 100], 16, [80, 85]), cell("postgres", [100], [100])]),
    );
    expect(smallMissed.met).toBe(false);
    expect(smallMissed.cause).toContain("The 102 B result misses the bound too");
  });

  it("says where it is missed: the three contenders' CPU, the decode alone, the small result's reading", () => {
    const missed = onceTarget(
      run([
        cell("redis", [50, 60], [100, 100], 16, [100, 100]),
        cell("postgres", [100, 100], [100, 100]),
      ]),
    );
    expect(missed.met).toBe(false);
    expect(missed.cause).toContain(
      "once(1,002 B) / once(102 B) / lock: redis client 18333 / 10000 / 10000, server 20.0 / 12.0 / 10.0",
    );
    expect(missed.cause).toContain(
      "decode alone, in this run: 2.50 µs of CPU per call for the 1,002 B result, 0.41 µs for the 102 B one",
    );
    expect(missed.cause).toContain(
      "The 102 B result meets the bound on both stores: what is over it is the 1,002 B result's size.",
    );
    expect(missed.cause).toContain("Needed:");
  });

  it("is not met with a store missing, and not measured without a run", () => {
    expect(onceTarget(run([cell("redis", [100], [100])])).met).toBeUndefined();
    expect(onceTarget(undefined)).toMatchObject({ measured: "—", met: undefined });
    // Another in-flight count than 16 is shown in the section, not judged.
    expect(onceTarget(run([cell("redis", [100], [100], 1)])).measured).toBe("—");
  });
});

describe("the once() cell's results", () => {
  it("are 1,000 and 100 bytes of JSON (2 more recorded with the marker), their own order id per key", () => {
    const size = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;
    for (const i of [0, 7, 999_999]) {
      expect(size(resultFor(i))).toBe(RESULT_JSON_BYTES);
      expect(size(smallResultFor(i))).toBe(SMALL_RESULT_JSON_BYTES);
      expect(smallResultFor(i).orderId).toBe(resultFor(i).orderId);
    }
    expect(RESULT_JSON_BYTES + 2).toBeLessThanOrEqual(1024);
    expect(resultFor(7).orderId).toBe("order-000007");
    expect(smallResultFor(7).chargeId).not.toBe(smallResultFor(8).chargeId);
  });

  it("are decoded from the text once() records, marker removed", () => {
    const text = recordedJson(smallResultFor(3));
    expect(text).toBe(JSON.stringify(smallResultFor(3)));
    expect(JSON.parse(text)).toEqual(smallResultFor(3));
  });

  it("are decoded alone round by round, both sizes in every round", () => {
    const d = decodeBench({ ...SETTINGS.smoke, rounds: 2, warmupMs: 1, roundMs: 20 });
    expect(d.rounds).toBe(2);
    for (const t of [d.large, d.small]) {
      expect(t.calls).toHaveLength(2);
      expect(t.cpuUs).toHaveLength(2);
      expect(t.wallUs).toHaveLength(2);
      for (const n of t.calls) expect(n).toBeGreaterThan(0);
    }
  });
});

describe("the report", () => {
  it("prints each cell's three contenders with their ratios, CPU, the decode alone, the failures, and the target row", () => {
    const r = run([cell("redis", [100, 100], [105, 95], 16, [50, 50])]);
    r.stores[2]!.error = "SqlLock does not store results yet";
    r.stores[2]!.versions = "";
    const text = onceSection(r).join("\n");
    expect(text).toContain(
      "| once(1,002 B) ops/s | p50 ms | p99 ms | once(102 B) ops/s | p50 ms | p99 ms | lock ops/s |",
    );
    expect(text).toContain(
      "| redis | 16 | 100 | 1.00 | 2.00 | 50 | 1.00 | 2.00 | 100 | 1.00 | 2.00 | 1.00× [0.95–1.05] | 2.00× [1.90–2.10] |",
    );
    // CPU: client µs/op of the three, each ratio; server the same.
    expect(text).toContain(
      "| redis | 16 | 10000 / 20000 / 10025 | 1.00× [0.95–1.05] | 2.00× [1.90–2.10] | 20.0 / 12.0 / 10.0 | 2.00× | 1.20× |",
    );
    // The opt-ins beside the plain verb, each in time per operation.
    expect(text).toContain("| store | in flight | duplicate ops/s, fingerprint / none |");
    expect(text).toContain(
      "| redis | 16 | 50 / 100 | 2.00× | 20050 / 10025 | 40 / 50 | 1.25× | 25063 / 20050 | 30.0 / 30.0 |",
    );
    expect(text).toContain("| 1,002 B | 2.50 [2.40–3.10] | 2.60 [2.50–3.30] | 30,000 |");
    expect(text).toContain("| 102 B | 0.41 [0.40–0.52] | 0.43 [0.42–0.60] | 176,000 |");
    // What once() adds over lock() in client CPU, beside the decode: medians' difference.
    expect(text).toContain(
      "at 16 in flight (medians, once(1,002 B) and once(102 B)): redis -25.1 and 9975.",
    );
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
    expect(
      targets(full).some((t) =>
        t.what.startsWith("once() duplicate (a 1,002-byte and a 102-byte result replayed)"),
      ),
    ).toBe(true);
    expect(renderMarkdown(full)).toContain("## once() against lock() on a duplicate");
  });
});
