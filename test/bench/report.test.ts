/**
 * The pure pieces of the benchmark report: the one spread rule every target is judged by,
 * the provenance line every generated file carries, and the cause paragraphs printed from
 * the run's own figures.
 */
import { describe, expect, it } from "vitest";
import type { SurfacePathResult } from "../../bench/gateway.js";
import { type Provenance, provenanceLine, reproducible } from "../../bench/provenance.js";
import {
  fmtOverhead,
  judge,
  judgeAll,
  type RunResult,
  renderMarkdown,
  spreadTarget,
  surfaceCause,
  targets,
} from "../../bench/report.js";
import { type Result, SETTINGS, type Spread } from "../../bench/runner.js";
import { type BackendResult, cellKey, PATHS } from "../../bench/suite.js";

const s = (min: number, median: number, max: number): Spread => ({ min, median, max });

describe("judge: the spread rule", () => {
  it("calls a target met only when every part's whole spread is on its side", () => {
    expect(judge([s(1.0, 1.1, 1.2), s(0.96, 1, 1.05)], 0.95, "atLeast")).toEqual({ met: true });
    expect(judge([s(0.1, 0.5, 1.5)], 1.5, "atMost")).toEqual({ met: true }); // the bound itself holds
  });

  it("calls it missed when some part's whole spread is on the wrong side", () => {
    expect(judge([s(1, 1.1, 1.2), s(0.5, 0.6, 0.7)], 0.95, "atLeast")).toEqual({ met: false });
    expect(judge([s(1.6, 2, 3)], 1.5, "atMost")).toEqual({ met: false });
  });

  it("calls a median on the right side with a straddling spread neither", () => {
    // The old telemetry and scale verdicts looked at the median only: this one was "met".
    expect(judge([s(0.82, 1.02, 1.18)], 0.95, "atLeast")).toEqual({
      met: undefined,
      straddles: true,
    });
  });

  it("never calls a target met when a part was not measured", () => {
    expect(judge([s(1, 1, 1), undefined], 0.95, "atLeast")).toEqual({ met: undefined });
    expect(judge([undefined], 0.95, "atLeast")).toEqual({ met: undefined });
    // …but a part measured on the wrong side still misses it.
    expect(judge([s(0.1, 0.2, 0.3), undefined], 0.95, "atLeast")).toEqual({ met: false });
  });

  it("combines several conditions: all met, any missed, else neither", () => {
    const met = { met: true };
    const missed = { met: false };
    const straddles = { met: undefined, straddles: true };
    expect(judgeAll([met, met])).toEqual({ met: true });
    expect(judgeAll([met, missed, straddles])).toEqual({ met: false });
    expect(judgeAll([met, straddles])).toEqual({ met: undefined, straddles: true });
    expect(judgeAll([met, { met: undefined }])).toEqual({ met: undefined });
  });

  it("spreadTarget prints every part and takes its verdict from judge", () => {
    const t = spreadTarget("x", [["push", s(0.82, 1.02, 1.18)]], 0.95, "atLeast", fmtOverhead);
    expect(t.met).toBeUndefined();
    expect(t.straddles).toBe(true);
    expect(t.measured).toBe("push −2.0 % [−18.0 % … +18.0 %]");
  });
});

const surface = (http: number, message: number, memory: number): SurfacePathResult => ({
  bareClaim: 10_000_000,
  memoryClaim: memory,
  http,
  message,
  httpPerCpuSecond: http,
  messagePerCpuSecond: message,
  rounds: 3,
  perRound: {
    memoryClaim: [memory, memory * 1.1, memory * 0.9],
    httpPerCpuSecond: [http, http * 1.05, http * 0.95],
    messagePerCpuSecond: [message, message * 1.05, message * 0.95],
  },
});

describe("surfaceCause: figures from the run", () => {
  it("prints what the run measured, not fixed numbers", () => {
    // 2 µs per push, 0.5 µs per pull message, a 0.1 µs claim, a 0.04 µs env check.
    const text = surfaceCause("duplicate", surface(500_000, 2_000_000, 10_000_000), 0.04);
    expect(text).toContain("idempotentHttp 2.0 µs");
    expect(text).toContain("idempotentMessage 0.50 µs");
    expect(text).toContain("InMemoryLock's claim 0.10 µs");
    expect(text).toContain("0.04 µs");
    expect(text).toContain("1.5 µs more than a pull message");
    expect(text).toContain("allows 0.30 µs per delivery in all, the claim's own 0.10 µs included");
    expect(text).not.toMatch(/about 0\.5 µs|0\.13 µs|0\.1–0\.2 µs/);
  });

  it("changes with the figures", () => {
    const a = surfaceCause("held", surface(400_000, 1_000_000, 5_000_000), 0.2);
    expect(a).toContain("idempotentHttp 2.5 µs");
    expect(a).toContain("1.5 µs more");
    expect(a).toContain("0.20 µs");
    const faster = surfaceCause("held", surface(2_000_000, 1_000_000, 5_000_000), 0.2);
    expect(faster).toContain("0.50 µs less than a pull message");
  });
});

describe("provenanceLine", () => {
  const commit = "0123456789abcdef0123456789abcdef01234567";

  it("names the commit of a clean tree", () => {
    const p: Provenance = { commit, changes: [] };
    expect(reproducible(p)).toBe(true);
    expect(provenanceLine(p)).toBe(
      `Run from commit \`${commit}\`, a clean tree (no uncommitted changes): check it out and rerun the command to reproduce.`,
    );
  });

  it("says uncommitted changes loudly, naming the paths", () => {
    const p: Provenance = { commit, changes: [" M bench/report.ts", "?? bench/new.ts"] };
    expect(reproducible(p)).toBe(false);
    const line = provenanceLine(p);
    expect(line).toMatch(/^\*\*.*\*\*$/);
    expect(line).toContain(
      "WITH UNCOMMITTED CHANGES (2 path(s): `bench/report.ts`, `bench/new.ts`)",
    );
    expect(line).toContain(commit);
  });

  it("counts the paths beyond five", () => {
    const changes = Array.from({ length: 8 }, (_, k) => ` M f${k}.ts`);
    expect(provenanceLine({ commit, changes })).toContain("and 3 more");
  });

  it("says so when git could not tell", () => {
    expect(provenanceLine({ commit: undefined, changes: [] })).toMatch(/^\*\*.*unknown commit/);
    expect(provenanceLine({ commit, changes: undefined })).toMatch(
      /^\*\*.*UNCOMMITTED CHANGES is unknown/,
    );
  });
});

/** A cell: ops/s per round, and a client CPU per op with twice that on the server. */
function cellOf(rounds: number[], clientCpu: number): Result {
  return {
    opsPerSec: rounds[Math.floor(rounds.length / 2)]!,
    p50: 1,
    p99: 1,
    ops: 1,
    rounds,
    clientCpu: rounds.map(() => clientCpu),
    serverCpu: rounds.map(() => clientCpu * 2),
  };
}

/** A backend whose every path at 16 in flight holds the given cell of each contender. */
function backendOf(id: string, byContender: Record<string, Result>): BackendResult {
  const cells = new Map<string, Result>();
  for (const path of PATHS) {
    for (const [name, result] of Object.entries(byContender)) {
      cells.set(cellKey(path, 16, name), result);
    }
  }
  return {
    id,
    title: id,
    versions: "",
    floorNote: "",
    loadAtStart: "",
    seconds: 1,
    serverCpu: true,
    contenders: Object.keys(byContender).map((name) =>
      name.startsWith("ours")
        ? { name, role: "ours" as const, floor: name.replace("ours", "floor") }
        : { name, role: name.startsWith("floor") ? ("floor" as const) : ("design" as const) },
    ),
    cells,
  };
}

function emptyRun(over: Partial<RunResult> = {}): RunResult {
  return {
    settings: SETTINGS.smoke,
    command: "npm run bench -- --smoke",
    provenance: { commit: "abc", changes: [" M x.ts"] },
    date: "2026-12-04T00:00:00.000Z",
    machine: "test",
    node: "v20",
    loadAtStart: "1.00 1.00 1.00",
    loadAtEnd: "2.00 2.00 2.00",
    seconds: 1,
    backends: [],
    scales: [],
    scaleErrors: [],
    charts: {},
    ...over,
  };
}

describe("renderMarkdown", () => {
  it("carries the provenance line in the header", () => {
    const text = renderMarkdown(emptyRun());
    expect(text.split("\n").slice(0, 6).join("\n")).toContain(
      "**Run from commit `abc` WITH UNCOMMITTED CHANGES",
    );
  });

  it("judges telemetry by the spread of its rounds, not the median", () => {
    const variant = (off: number[], noSdk: number[]) => ({ off, noSdk, sdk: off });
    const telemetry = {
      cycles: 1,
      pushes: 1,
      rounds: 3,
      lock: { off: 100, noSdk: 100, sdk: 10 },
      push: { off: 100, noSdk: 100, sdk: 10 },
      // push: 1.18, 0.97, 0.82 → the median is fine, the spread straddles 0.95.
      pushRounds: variant([100, 100, 100], [118, 97, 82]),
      lockRounds: variant([100, 100, 100], [99, 100, 101]),
    };
    const t = targets(emptyRun({ telemetry })).find((x) => x.what.startsWith("Telemetry"))!;
    expect(t.met).toBeUndefined();
    expect(t.straddles).toBe(true);
    const ok = targets(
      emptyRun({ telemetry: { ...telemetry, pushRounds: variant([100, 100], [99, 101]) } }),
    ).find((x) => x.what.startsWith("Telemetry"))!;
    expect(ok.met).toBe(true);
  });

  it("carries the RPC counts when they ran, with the reason of each path above the fewest", () => {
    const path = (total: number) => ({ total, byMethod: { Commit: total } });
    const store = {
      first: path(3),
      duplicate: path(1),
      held: path(1),
      "mutex cycle": path(2),
      "once duplicate": path(1),
    };
    expect(renderMarkdown(emptyRun())).not.toContain("Round trips per path");
    const text = renderMarkdown(
      emptyRun({
        rpc: { datastore: store, firestore: { ...store, duplicate: path(2) }, spanner: store },
      }),
    );
    expect(text).toContain("## Round trips per path (Datastore, Firestore, Spanner)");
    // At the fewest calls the store allows, no reason; above it, the budget's reason.
    expect(text).toContain("| spanner | first | 3 | Commit 3 | 3 |  |");
    expect(text).toContain(
      "| firestore | duplicate | 2 | Commit 2 | 1 | the claim tries create() first",
    );
  });

  it("gives each target it misses the run's own figures: the row-lock design, the spread", () => {
    // ours runs 2× the row-lock design in every round, with a spread of ±50 % against the floor.
    const postgres = backendOf("postgres", {
      ours: cellOf([50, 100, 150], 40),
      floor: cellOf([100, 100, 100], 30),
      "row-lock": cellOf([25, 50, 75], 70),
    });
    const all = targets(emptyRun({ backends: [postgres] }));
    const rowLock = all.find((t) => t.what.includes("row-lock design"))!;
    expect(rowLock.met).toBe(false);
    expect(rowLock.cause).toContain("duplicate client 40.0 vs 70.0, server 80.0 vs 140");
    const spreadOf = all.find((t) => t.what.startsWith("Spread of each"))!;
    expect(spreadOf.met).toBe(false);
    expect(spreadOf.measured).toContain("postgres ours first ±50 %");
    expect(spreadOf.cause).toContain("1.00 1.00 1.00 at the start and 2.00 2.00 2.00 at the end");
  });

  it("judges Redis against the floor on each client, and the first delivery against Powertools by ops and CPU", () => {
    const redis = (oursGlide: number[], poweredCpu: number) =>
      targets(
        emptyRun({
          backends: [
            backendOf("redis", {
              "ours/ioredis": cellOf([90, 90], 10),
              "floor/ioredis": cellOf([100, 100], 10),
              "ours/@redis": cellOf([95, 100], 10),
              "floor/@redis": cellOf([100, 100], 10),
              "ours/glide": cellOf(oursGlide, 10),
              "floor/glide": cellOf([100, 100], 10),
              // Level on ops/s: the CPU, client plus server, decides.
              "powertools/@redis": cellOf([95, 100], poweredCpu),
            }),
          ],
        }),
      );
    const on = (all: ReturnType<typeof targets>, text: string) =>
      all.find((t) => t.what.includes(text))!;
    const fine = redis([90, 95], 12);
    expect(on(fine, "ours/ioredis ops/s").met).toBe(true);
    expect(on(fine, "ours/@redis ops/s").met).toBe(true);
    expect(on(fine, "ours/glide ops/s").met).toBe(true);
    expect(on(fine, "never behind Powertools")).toMatchObject({
      met: true,
      measured: "ops/s 1.00×, CPU 0.83×",
    });
    const slow = redis([50, 60], 8);
    expect(on(slow, "ours/glide ops/s")).toMatchObject({ met: false });
    expect(on(slow, "ours/glide ops/s").cause).toContain("CPU µs/op, ours/glide vs floor/glide");
    expect(on(slow, "never behind Powertools").met).toBe(false);
    expect(on(slow, "never behind Powertools").cause).toContain(
      "first client 10.0 vs 8.0, server 20.0 vs 16.0",
    );
  });

  it("gives no cause for a target nothing of which ran", () => {
    expect(targets(emptyRun()).filter((t) => t.cause)).toEqual([]);
    expect(renderMarkdown(emptyRun())).not.toContain("Where a target is not met");
  });

  it("judges a scale run by the spread of largest ÷ smallest, round by round", () => {
    const result = (rounds: number[]) => ({
      opsPerSec: rounds.reduce((a, b) => a + b, 0) / rounds.length,
      p50: 1,
      p99: 1,
      ops: 1,
      rounds,
      clientCpu: [],
    });
    const scale = (last: number[]) => ({
      id: "redis",
      title: "Redis",
      sizes: [1_000, 1_000_000],
      results: [result([100, 100, 100]), result(last)],
      loadSeconds: [0, 0],
      note: "",
    });
    const judged = (last: number[]) =>
      targets(emptyRun({ scales: [scale(last)] })).find((t) => t.what.startsWith("Scale, redis"))!;
    // The median (0.95) was enough before; one round at 0.85 now leaves it unestablished.
    expect(judged([95, 85, 99]).met).toBeUndefined();
    expect(judged([95, 91, 99]).met).toBe(true);
    expect(judged([80, 85, 70]).met).toBe(false);
    expect(judged([95, 91, 99]).measured).toContain("1M ÷ 1k 0.95× [0.91–0.99]");
  });

  it("reports each pass's own load in the repeat section", () => {
    const pass = (k: number) => emptyRun({ loadAtStart: `${k}.00 0 0`, loadAtEnd: `${k}.50 0 0` });
    const runs = [pass(1), pass(2), pass(3)];
    const text = renderMarkdown({ ...runs[2]!, loadAtStart: runs[0]!.loadAtStart, repeats: runs });
    expect(text).toContain(
      "pass 1: 1.00 0 0 → 1.50 0 0 (1 s); pass 2: 2.00 0 0 → 2.50 0 0 (1 s); pass 3: 3.00 0 0 → 3.50 0 0 (1 s)",
    );
  });
});
