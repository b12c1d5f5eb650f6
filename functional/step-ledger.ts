/**
 * The step storm's books: what the three sinks received (one row per arrival, never
 * de-duplicated) checked against what the workers recorded of every step's runs. Pure, so
 * its rules are pinned by unit tests (test/functional/step-ledger.test.ts), with the
 * histories a handler without step() makes.
 *
 * What "exactly once" can honestly mean for a step whose effect is not idempotent: a step
 * runs its body, the effect lands, and only then does step() record the result with the
 * step's DONE record. A worker killed between the effect and that record leaves the step
 * unrecorded, and the redelivery runs it again: exactly like lock() (see ledger.ts). So, per
 * message and step:
 *
 * - every arrival in the sink comes from a body run a worker recorded, one arrival per run;
 * - at most one run *went on* (returned to its handler, or is still open in a live worker):
 *   every other run was cut — its worker died before the step returned, or its body threw —
 *   so arrivals ≤ 1 + runs cut by a crash in that window;
 * - no run starts after a run of the same step has returned: a step that returned to its
 *   handler is recorded and must be replayed, never run again, whatever crashes come after
 *   it (before the next step, between steps, after the last one);
 * - every call of the step resolved to one value, the recorded one, which is the result some
 *   run of the step made; every arrival of the next step saw exactly that value;
 * - every message's every step landed at least once.
 */
import type { WorkerEvent } from "./records.js";

/** One row of a step's sink: an arrival of the effect, as the body wrote it. */
export interface StepArrival {
  /** The delivery's key (the key step() derives the step's from). */
  readonly key: string;
  readonly step: string;
  /** The id of the body run that wrote it. */
  readonly run: string;
  /** What the body received from the step before (the earlier step's result; "" for the first). */
  readonly seen: string;
  /** The result the body made (its return value). */
  readonly made: string;
}

export interface StepLedgerInput {
  /** The handler's steps, in order: each after the first receives the one before's result. */
  readonly steps: readonly string[];
  /** The delivery keys whose every step must have landed. */
  readonly keys: readonly string[];
  /** The scenario's worker events, each worker's in the order it wrote them. */
  readonly events: readonly WorkerEvent[];
  /** Every row of every step's sink. */
  readonly arrivals: readonly StepArrival[];
  /** Worker processes that died during the run. */
  readonly deadPids: ReadonlySet<number>;
}

/** How a step's body run ended, read from the same worker's later events. */
export type RunEnding = "returned" | "threw" | "cut" | "open";

export interface StepFigures {
  /** Body runs the workers recorded. */
  readonly runs: number;
  readonly arrivals: number;
  /** Calls of the step that resolved to the recorded result without running the body. */
  readonly replays: number;
  /** Runs whose worker died before the step returned (a crash between its start and record). */
  readonly cut: number;
  /** Arrivals beyond a message's first for this step. */
  readonly reRuns: number;
}

export interface StepLedger {
  readonly perStep: Readonly<Record<string, StepFigures>>;
  /** Keys whose every step landed exactly once, re-runs or none. */
  readonly keysExactlyOnce: number;
  /** Keys with a re-run of some step (every one of them after a cut run, when no violation). */
  readonly keysReRun: number;
  /** (key, step) pairs with no arrival. */
  readonly missing: number;
  /** Arrivals no rule explains: beyond the first of their step and not after a cut run. */
  readonly unexplained: number;
  /** Per key: 1 + the arrivals no rule explains, or 0 when a step never landed. */
  readonly counts: ReadonlyMap<string, number>;
  /** The workers' own SIGKILLs, per crash point. */
  readonly crashes: Readonly<Record<string, number>>;
  readonly violations: string[];
}

interface Run {
  readonly id: string;
  readonly pid: number;
  readonly startedAt: number;
  ending: RunEnding;
  endedAt: number;
  arrivals: number;
}

/** The events and arrivals of one message's one step. */
interface StepBook {
  readonly runs: Map<string, Run>;
  readonly values: string[];
  readonly arrivals: StepArrival[];
  replays: number;
}

const at = <K, V>(map: Map<K, V>, key: K, make: () => V): V => {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
};

export function stepLedger({
  steps,
  keys,
  events,
  arrivals,
  deadPids,
}: StepLedgerInput): StepLedger {
  const violations: string[] = [];
  const books = new Map<string, StepBook>();
  const book = (key: string, step: string) =>
    at(books, `${key}\u0000${step}`, () => ({
      runs: new Map<string, Run>(),
      values: [],
      arrivals: [],
      replays: 0,
    }));
  const crashes: Record<string, number> = {};

  // Runs, and how each ended: the same worker's step_done (returned) or failed (threw) with
  // its run id; a dead worker's unfinished run was cut, a live one's is still open.
  for (const e of events) {
    if (e.kind === "crash" && e.point !== undefined) crashes[e.point] = (crashes[e.point] ?? 0) + 1;
    if (e.step === undefined) continue;
    const b = book(e.key, e.step);
    if (e.kind === "step_run" && e.run !== undefined) {
      if (b.runs.has(e.run)) violations.push(`${e.key} ${e.step}: run ${e.run} started twice`);
      b.runs.set(e.run, {
        id: e.run,
        pid: e.pid,
        startedAt: e.t,
        ending: deadPids.has(e.pid) ? "cut" : "open",
        endedAt: Number.POSITIVE_INFINITY,
        arrivals: 0,
      });
    } else if ((e.kind === "step_done" || e.kind === "failed") && e.run !== undefined) {
      const run = b.runs.get(e.run);
      if (run === undefined || run.pid !== e.pid) {
        violations.push(`${e.key} ${e.step}: run ${e.run} ended without a start by its worker`);
      } else {
        run.ending = e.kind === "step_done" ? "returned" : "threw";
        run.endedAt = e.t;
      }
    }
    if (e.kind === "step_done" && e.value !== undefined) {
      b.values.push(e.value);
      if (e.run === undefined) b.replays += 1;
    }
  }

  for (const a of arrivals) {
    const b = book(a.key, a.step);
    b.arrivals.push(a);
    const run = b.runs.get(a.run);
    if (run === undefined)
      violations.push(`${a.key} ${a.step}: an arrival from run ${a.run}, which no worker recorded`);
    else if (++run.arrivals > 1)
      violations.push(`${a.key} ${a.step}: run ${a.run} arrived ${run.arrivals} times`);
  }

  const perStep: Record<string, StepFigures> = {};
  const unexplainedOf = new Map<string, number>();
  const reRunKeys = new Set<string>();
  const missing: string[] = [];
  const expected = new Set(keys);
  const allKeys = new Set([...keys, ...[...books.keys()].map((k) => k.split("\u0000")[0] ?? "")]);
  for (const key of allKeys) {
    let recordedBefore: string | undefined;
    for (const [index, step] of steps.entries()) {
      const b = books.get(`${key}\u0000${step}`);
      const runs = b ? [...b.runs.values()] : [];
      const landed = b?.arrivals ?? [];
      const figures = perStep[step] ?? { runs: 0, arrivals: 0, replays: 0, cut: 0, reRuns: 0 };
      perStep[step] = {
        runs: figures.runs + runs.length,
        arrivals: figures.arrivals + landed.length,
        replays: figures.replays + (b?.replays ?? 0),
        cut: figures.cut + runs.filter((r) => r.ending === "cut").length,
        reRuns: figures.reRuns + Math.max(0, landed.length - 1),
      };
      if (landed.length > 1) reRunKeys.add(key);
      if (landed.length === 0 && expected.has(key)) missing.push(`${key} ${step}`);

      // At most one run went on: every other was cut or threw.
      const wentOn = runs.filter((r) => r.ending === "returned" || r.ending === "open");
      if (wentOn.length > 1)
        violations.push(
          `${key} ${step}: ran ${wentOn.length} times without a crash between its effect and its record (${wentOn.filter((r) => r.ending === "returned").length} returned, ${wentOn.filter((r) => r.ending === "open").length} open in a live worker)`,
        );
      const explained = runs.filter((r) => r.ending === "cut" || r.ending === "threw").length;
      const unexplained = Math.max(0, landed.length - 1 - explained);
      if (unexplained > 0) unexplainedOf.set(key, (unexplainedOf.get(key) ?? 0) + unexplained);

      // Never again once a run returned: its result was recorded and must be replayed.
      const firstReturn = Math.min(
        ...runs.filter((r) => r.ending === "returned").map((r) => r.endedAt),
      );
      const after = runs.filter((r) => r.startedAt > firstReturn);
      if (after.length > 0)
        violations.push(
          `${key} ${step}: ran again ${after.length} time(s) after a run of it had returned (${after.filter((r) => r.arrivals > 0).length} more arrivals): its result was not replayed`,
        );

      // One recorded result, made by a run of this step, and seen by the next step.
      const values = [...new Set(b?.values ?? [])];
      if (values.length > 1)
        violations.push(
          `${key} ${step}: resolved to ${values.length} different results (${values.slice(0, 3).join(", ")})`,
        );
      const recorded = values.length === 1 ? values[0] : undefined;
      if (recorded !== undefined && !landed.some((a) => a.made === recorded))
        violations.push(`${key} ${step}: resolved to ${recorded}, which no arrival made`);
      if (index > 0 && recordedBefore !== undefined)
        for (const a of landed)
          if (a.seen !== recordedBefore)
            violations.push(
              `${key} ${step}: run ${a.run} saw ${a.seen || "nothing"}, not the recorded ${steps[index - 1]} ${recordedBefore}`,
            );
      if (index > 0 && recordedBefore === undefined && landed.length > 0)
        violations.push(`${key} ${step}: landed, but ${steps[index - 1]} has no one result`);
      recordedBefore = recorded;
    }
  }

  // Last, in one line: a run that gave up on unacked messages has thousands of these.
  if (missing.length > 0)
    violations.push(
      `${missing.length} steps never landed: ${missing.slice(0, 6).join(", ")}${missing.length > 6 ? ", …" : ""}`,
    );
  const counts = new Map<string, number>();
  for (const key of allKeys) {
    const everyStep = steps.every((s) => (books.get(`${key}\u0000${s}`)?.arrivals.length ?? 0) > 0);
    counts.set(key, everyStep ? 1 + (unexplainedOf.get(key) ?? 0) : 0);
  }
  const exactlyOnce = [...allKeys].filter((key) =>
    steps.every((s) => books.get(`${key}\u0000${s}`)?.arrivals.length === 1),
  ).length;
  return {
    perStep,
    keysExactlyOnce: exactlyOnce,
    keysReRun: reRunKeys.size,
    missing: missing.length,
    unexplained: [...unexplainedOf.values()].reduce((n, v) => n + v, 0),
    counts,
    crashes,
    violations,
  };
}
