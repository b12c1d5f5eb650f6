/**
 * The pure part of `--against`: new ÷ old round by round, read by judge()'s spread rule, and
 * the table printed from it.
 */
import { describe, expect, it } from "vitest";
import {
  type ComparisonRun,
  compareFigure,
  type FigureRounds,
  fmtChange,
  MIN_ROUNDS,
  readRatio,
  renderComparison,
} from "../../bench/comparison.js";
import type { Spread } from "../../bench/runner.js";

const s = (min: number, median: number, max: number): Spread => ({ min, median, max });

/** A figure whose old side runs 100 calls per CPU-second each round, the new side `news`. */
const figure = (id: string, news: number[], over: Partial<FigureRounds> = {}): FigureRounds => ({
  id,
  what: `${id} figure`,
  unit: "cycles",
  calls: 1_000,
  old: news.map(() => ({ perCpuSecond: 100, perWallSecond: 50 })),
  new: news.map((n) => ({ perCpuSecond: n, perWallSecond: 50 })),
  ...over,
});

describe("readRatio: the spread rule with the bound 1", () => {
  it("reads slower beyond noise only when every round is below 1", () => {
    expect(readRatio(s(0.8, 0.9, 0.99), 5)).toBe("slower beyond noise");
    expect(readRatio(s(0.8, 0.9, 1.01), 5)).toBe("within noise");
  });

  it("reads faster beyond noise only when every round is above 1", () => {
    expect(readRatio(s(1.01, 1.1, 1.3), 5)).toBe("faster beyond noise");
    expect(readRatio(s(0.99, 1.1, 1.3), 5)).toBe("within noise");
  });

  it("reads a round exactly at 1 as within noise, not as a change", () => {
    expect(readRatio(s(1, 1, 1), 5)).toBe("within noise");
    expect(readRatio(s(0.9, 0.95, 1), 5)).toBe("within noise");
  });

  it("does not read fewer rounds than MIN_ROUNDS, nor a figure not measured", () => {
    expect(readRatio(s(0.5, 0.5, 0.5), MIN_ROUNDS - 1)).toBe("too few rounds");
    expect(readRatio(s(0.5, 0.5, 0.5), MIN_ROUNDS)).toBe("slower beyond noise");
    expect(readRatio(undefined, 5)).toBe("not measured");
  });
});

describe("compareFigure", () => {
  it("takes new ÷ old round by round per CPU-second, and reads that spread", () => {
    const c = compareFigure({
      ...figure("lock", [90, 95, 80]),
      old: [100, 100, 200].map((n) => ({ perCpuSecond: n, perWallSecond: n })),
    });
    expect(c.perRound).toEqual([0.9, 0.95, 0.4]);
    expect(c.ratio).toEqual(s(0.4, 0.9, 0.95));
    expect(c.old).toBe(100);
    expect(c.new).toBe(90);
    expect(c.reading).toBe("slower beyond noise");
  });

  it("keeps the wall-clock ratio apart and does not read it", () => {
    const c = compareFigure({
      ...figure("push", [99, 101, 100]),
      new: [99, 101, 100].map((n) => ({ perCpuSecond: n, perWallSecond: 10 })),
    });
    expect(c.wallRatio).toEqual(s(0.2, 0.2, 0.2));
    expect(c.reading).toBe("within noise");
  });

  it("pairs only the rounds both sides have", () => {
    const c = compareFigure({ ...figure("x", [90, 90, 90]), old: [] });
    expect(c.perRound).toEqual([]);
    expect(c.ratio).toBeUndefined();
    expect(c.reading).toBe("not measured");
  });
});

describe("fmtChange", () => {
  it("says a ratio as the change it means", () => {
    expect(fmtChange(0.93)).toBe("7.0 % slower");
    expect(fmtChange(1.031)).toBe("3.1 % faster");
  });
});

function run(figures: FigureRounds[], rounds = 3): ComparisonRun {
  return {
    command: "npm run bench -- --only gateway --against efa31e5",
    provenance: { commit: "abc", changes: [] },
    ref: "efa31e5",
    commit: "efa31e5a6574524893aaf372c7e1aacf695b7b59",
    date: "2026-12-05T00:00:00.000Z",
    machine: "test",
    node: "v20",
    loadAtStart: "1.00 1.00 1.00",
    loadAtEnd: "2.00 2.00 2.00",
    seconds: 60,
    rounds,
    sampleMs: 140,
    figures,
  };
}

describe("renderComparison", () => {
  const figures = [
    figure("floor", [99, 101, 100], { control: true, what: "floor" }),
    figure("lock", [90, 92, 95], { what: "lock()" }),
    figure("push", [98, 103, 100], { what: "push" }),
    figure("message", [110, 120, 105], { what: "message" }),
  ];

  it("names both sides, the load and the rule", () => {
    const text = renderComparison(run(figures));
    expect(text).toContain("Run from commit `abc`, a clean tree");
    expect(text).toContain("Old: `efa31e5`, commit `efa31e5a6574524893aaf372c7e1aacf695b7b59`");
    expect(text).toContain("1.00 1.00 1.00 at start, 2.00 2.00 2.00 at the end");
    expect(text).toContain("`judge()` of bench/report.ts with the bound 1");
    expect(text).toContain("not BENCHMARKS.md, which only the full run writes");
  });

  it("prints each figure for both builds with its ratio and reading", () => {
    const text = renderComparison(run(figures));
    expect(text).toContain(
      "| lock() | 1,000 cycles | 100 | 92 | 0.92× [0.90–0.95] | **slower beyond noise** | 1.00× |",
    );
    expect(text).toContain(
      "| push | 1,000 cycles | 100 | 100 | 1.00× [0.98–1.03] | within noise |",
    );
    expect(text).toContain(
      "| message | 1,000 cycles | 100 | 110 | 1.10× [1.05–1.20] | faster beyond noise |",
    );
  });

  it("shows the control as the run's noise, never read as slower or faster", () => {
    const text = renderComparison(run(figures));
    expect(text).toContain(
      "| control: floor | 1,000 cycles | 100 | 100 | 1.00× [0.99–1.01] | (control) |",
    );
    expect(text).toContain("Control, the same code on both sides: floor 1.00× [0.99–1.01].");
  });

  it("names what is slower and faster beyond noise, and by how much", () => {
    const text = renderComparison(run(figures));
    expect(text).toContain("Slower beyond noise: lock() 0.92× [0.90–0.95] (8.0 % slower).");
    expect(text).toContain("Faster beyond noise: message 1.10× [1.05–1.20] (10.0 % faster).");
    const quiet = renderComparison(run([figures[0]!, figures[2]!]));
    expect(quiet).toContain("No figure is slower beyond noise.");
  });

  it("lists every round's ratio with the build that went first", () => {
    const text = renderComparison(run(figures));
    expect(text).toContain("| figure | 1 (old first) | 2 (new first) | 3 (old first) |");
    expect(text).toContain("| lock() | 0.90 | 0.92 | 0.95 |");
  });

  it("reads nothing from a run of one round", () => {
    const one = [figure("lock", [50], { what: "lock()" })];
    const text = renderComparison(run(one, 1));
    expect(text).toContain("| too few rounds |");
    expect(text).toContain("Too few rounds to read (1)");
    expect(text).not.toContain("Slower beyond noise:");
  });
});
