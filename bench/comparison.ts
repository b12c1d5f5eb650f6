/**
 * The report of `--against <ref>`: each gateway figure measured for two builds, each in its own process,
 * round by round, side by side; new ÷ old taken per round (the two samples of a round ran back
 * to back) and read by the report's one spread rule, `judge()`: slower or faster beyond noise
 * only when every round says so. Pure: the timing is bench/gateway-against.ts's.
 */
import { type Provenance, provenanceLine } from "./provenance.js";
import { fmtSpread, judge } from "./report.js";
import { fmtRate, pairedRatios, type Spread, spread } from "./runner.js";

/** One timed sample: calls per second of wall clock and of this process's CPU time. */
export interface RateSample {
  perWallSecond: number;
  perCpuSecond: number;
}

/** One figure's samples, one per round for each build, in round order. */
export interface FigureRounds {
  id: string;
  what: string;
  /** What one call is: "cycles", "pushes", "deliveries", "calls". */
  unit: string;
  /** Calls timed per sample. */
  calls: number;
  /** The bench's own code on both sides: its spread is this run's noise, nothing else. */
  control?: boolean;
  old: RateSample[];
  new: RateSample[];
}

/**
 * How new ÷ old reads: beyond noise when the whole spread over rounds is on one side of 1
 * (judge() with the bound 1), within noise when it straddles 1. Fewer rounds than
 * {@link MIN_ROUNDS} are not read at all: two rounds on one side are one chance in two.
 */
export type Reading =
  | "slower beyond noise"
  | "faster beyond noise"
  | "within noise"
  | "too few rounds"
  | "not measured";

export const MIN_ROUNDS = 3;

export function readRatio(ratio: Spread | undefined, rounds: number): Reading {
  if (ratio === undefined) return "not measured";
  if (rounds < MIN_ROUNDS) return "too few rounds";
  if (judge([ratio], 1, "atLeast").met === false) return "slower beyond noise";
  if (judge([ratio], 1, "atMost").met === false) return "faster beyond noise";
  return "within noise";
}

export interface FigureComparison {
  figure: FigureRounds;
  /** Median calls per CPU-second over the rounds. */
  old: number;
  new: number;
  /** new ÷ old per CPU-second, round by round: the figure that is read. */
  ratio: Spread | undefined;
  /** new ÷ old per wall-clock second, round by round: shown, not read (load moves it most). */
  wallRatio: Spread | undefined;
  /** new ÷ old per CPU-second of each round, in round order. */
  perRound: number[];
  reading: Reading;
}

const median = (values: readonly number[]) => spread(values)?.median ?? 0;

export function compareFigure(figure: FigureRounds): FigureComparison {
  const cpu = (side: readonly RateSample[]) => side.map((s) => s.perCpuSecond);
  const wall = (side: readonly RateSample[]) => side.map((s) => s.perWallSecond);
  const perRound = pairedRatios(cpu(figure.new), cpu(figure.old));
  const ratio = spread(perRound);
  return {
    figure,
    old: median(cpu(figure.old)),
    new: median(cpu(figure.new)),
    ratio,
    wallRatio: spread(pairedRatios(wall(figure.new), wall(figure.old))),
    perRound,
    reading: readRatio(ratio, perRound.length),
  };
}

/** Everything one `--against` run measured, and where. */
export interface ComparisonRun {
  command: string;
  /** The working tree's state: the new side. */
  provenance: Provenance;
  /** The old side: the ref as given and the commit it named. */
  ref: string;
  commit: string;
  date: string;
  machine: string;
  node: string;
  loadAtStart: string;
  loadAtEnd: string;
  seconds: number;
  rounds: number;
  /** The CPU time each sample was sized to take, from the warm-up's rates. */
  sampleMs: number;
  figures: FigureRounds[];
}

/** A ratio as the change it means: "7.0 % slower", "3.1 % faster". */
export function fmtChange(ratio: number): string {
  const pct = Math.abs(1 - ratio) * 100;
  return ratio < 1 ? `${pct.toFixed(1)} % slower` : `${pct.toFixed(1)} % faster`;
}

const reading = (c: FigureComparison) =>
  c.reading === "slower beyond noise" ? `**${c.reading}**` : c.reading;

export function renderComparison(run: ComparisonRun): string {
  const compared = run.figures.map(compareFigure);
  const measured = compared.filter((c) => !c.figure.control);
  const controls = compared.filter((c) => c.figure.control);
  const slower = measured.filter((c) => c.reading === "slower beyond noise");
  const faster = measured.filter((c) => c.reading === "faster beyond noise");
  const named = (cs: readonly FigureComparison[]) =>
    cs
      .map((c) => `${c.figure.what} ${fmtSpread(c.ratio!)} (${fmtChange(c.ratio!.median)})`)
      .join("; ");
  const lines = [
    `# Gateway: the working tree against ${run.ref}`,
    "",
    `Written by \`${run.command}\`; not BENCHMARKS.md, which only the full run writes.`,
    "",
    `- New: the working tree. ${provenanceLine(run.provenance)}`,
    `- Old: \`${run.ref}\`, commit \`${run.commit}\`: its src/ and tsconfig.json bundled the same way, against the same node_modules.`,
    `- Date: ${run.date}; ${run.seconds.toFixed(0)} s in all. Machine: ${run.machine}; Node ${run.node}.`,
    `- Load average (1/5/15 min): ${run.loadAtStart} at start, ${run.loadAtEnd} at the end. Other processes share these cores.`,
    `- ${run.rounds} round(s), each build in a process of its own (a process-wide cost, such as the promise hooks the first AsyncLocalStorage store turns on in Node 20 and 22, stays with the build that causes it), the two driven from a third, after an untimed warm-up of each figure on both that sized its samples to about ${run.sampleMs.toFixed(0)} ms of CPU; in each round every figure is timed for both builds back to back, old first in odd rounds and new first in even ones, each sample after a forced GC. Rates are calls per second of the timing process's CPU time (user + system), which a busy machine disturbs far less than the wall clock; the wall-clock ratio is shown beside it.`,
    `- new ÷ old is taken round by round and shown as median [min–max]. **Slower beyond noise**: every round's new ÷ old below 1 (\`judge()\` of bench/report.ts with the bound 1); faster beyond noise: every round above 1; otherwise within noise${run.rounds < MIN_ROUNDS ? `; fewer than ${MIN_ROUNDS} rounds are not read` : ""}. A control runs the bench's own code in both processes: its spread is this run's noise, and a control off 1 beyond noise is not noise but a process-wide cost: the bench's own code slowed by what one build turned on in its process.`,
    "",
    "| figure | calls per sample | old /CPU-s | new /CPU-s | new ÷ old, per CPU-second | reading | new ÷ old, wall clock |",
    "|---|--:|--:|--:|--:|---|--:|",
    ...compared.map(
      (c) =>
        `| ${c.figure.control ? `control: ${c.figure.what}` : c.figure.what} | ${c.figure.calls.toLocaleString("en-US")} ${c.figure.unit} | ${fmtRate(c.old)} | ${fmtRate(c.new)} | ${c.ratio ? fmtSpread(c.ratio) : "—"} | ${c.figure.control ? (c.reading === "within noise" || c.reading === "too few rounds" ? "(control)" : `(control) **${c.reading}: process-wide**`) : reading(c)} | ${c.wallRatio ? fmtSpread(c.wallRatio) : "—"} |`,
    ),
    "",
    run.rounds < MIN_ROUNDS
      ? `Too few rounds to read (${run.rounds}); drop --smoke.`
      : slower.length === 0
        ? `No figure is slower beyond noise.${faster.length > 0 ? ` Faster beyond noise: ${named(faster)}.` : ""}`
        : `Slower beyond noise: ${named(slower)}.${faster.length > 0 ? ` Faster beyond noise: ${named(faster)}.` : ""}`,
    ...(controls.length > 0
      ? [
          "",
          `Control${controls.length > 1 ? "s" : ""}, the same code on both sides: ${controls.map((c) => `${c.figure.what} ${c.ratio ? fmtSpread(c.ratio) : "—"}`).join("; ")}.`,
        ]
      : []),
    "",
    "### new ÷ old per CPU-second, round by round",
    "",
    `| figure | ${Array.from({ length: run.rounds }, (_, k) => `${k + 1} (${k % 2 === 0 ? "old" : "new"} first)`).join(" | ")} |`,
    `|---|${"--:|".repeat(run.rounds)}`,
    ...compared.map(
      (c) =>
        `| ${c.figure.what} | ${Array.from({ length: run.rounds }, (_, k) => (c.perRound[k] === undefined ? "—" : c.perRound[k]!.toFixed(2))).join(" | ")} |`,
    ),
  ];
  return `${lines.join("\n")}\n`;
}
