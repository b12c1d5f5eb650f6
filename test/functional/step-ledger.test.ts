import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { WorkerEvent } from "../../functional/records.js";
import { type StepArrival, stepLedger } from "../../functional/step-ledger.js";

const KEY = "steps-sql/order:t-0001";
const STEPS = ["charge", "ship", "email"] as const;

/**
 * Where a delivery's worker dies: before the first step, inside a step (after its effect,
 * before step() returns), between two steps, after the last one (before the ack), or not.
 */
type Point = "before" | `in:${string}` | `${string}|${string}` | "after" | "none";

/** A crash point reached after the step at `index` returned (between, after, or inside a later step). */
const afterAReturn = (point: Point): boolean =>
  point === "after" || point.includes("|") || (point.startsWith("in:") && point !== "in:charge");

interface History {
  events: WorkerEvent[];
  arrivals: StepArrival[];
  dead: Set<number>;
}

/**
 * One message's deliveries, a worker each (pid 1, 2, …), each dying at its point, then one
 * that finishes. `recorded`: the handler uses step(), whose returned steps are replayed; the
 * control (lock() alone) runs every step again. `recordThenDie`: the crash inside a step
 * lands after step()'s complete but before the step returned (the record exists).
 */
function simulate(points: readonly Point[], recorded: boolean, recordThenDie = false): History {
  const events: WorkerEvent[] = [];
  const arrivals: StepArrival[] = [];
  const dead = new Set<number>();
  const results = new Map<string, string>();
  let t = 0;
  let runs = 0;
  const e = (pid: number, kind: WorkerEvent["kind"], extra: Partial<WorkerEvent> = {}) =>
    events.push({ worker: `w${pid}`, pid, t: ++t, kind, key: KEY, ...extra });
  for (const [i, point] of [...points, "none" as const].entries()) {
    const pid = i + 1;
    const crash = (where: Point) => {
      if (where !== point) return false;
      e(pid, "crash", { point: where });
      dead.add(pid);
      return true;
    };
    e(pid, "body");
    if (crash("before")) continue;
    let seen = "";
    let died = false;
    for (const [s, step] of STEPS.entries()) {
      const replay = recorded ? results.get(step) : undefined;
      if (replay !== undefined) {
        e(pid, "step_done", { step, value: replay });
        seen = replay;
      } else {
        const run = `r${++runs}`;
        const made = `${step}-${runs}`;
        e(pid, "step_run", { step, run });
        arrivals.push({ key: KEY, step, run, seen, made });
        if (point === `in:${step}`) {
          if (recorded && recordThenDie) results.set(step, made);
          crash(point);
          died = true;
          break;
        }
        if (recorded) results.set(step, made);
        e(pid, "step_done", { step, run, value: made });
        seen = made;
      }
      const next = STEPS[s + 1];
      if (next !== undefined && crash(`${step}|${next}`)) {
        died = true;
        break;
      }
    }
    if (died || crash("after")) continue;
    break; // acked
  }
  return { events, arrivals, dead };
}

const check = (h: History, keys = [KEY]) =>
  stepLedger({ steps: STEPS, keys, events: h.events, arrivals: h.arrivals, deadPids: h.dead });

const POINTS: readonly Point[] = [
  "before",
  "in:charge",
  "charge|ship",
  "in:ship",
  "ship|email",
  "in:email",
  "after",
];

describe("the step storm's ledger", () => {
  it("passes a clean delivery: each step once, each later step saw the one before", () => {
    const b = check(simulate([], true));
    expect(b.violations).toEqual([]);
    expect(b.keysExactlyOnce).toBe(1);
    expect(b.counts.get(KEY)).toBe(1);
    expect(b.perStep.charge).toEqual({ runs: 1, arrivals: 1, replays: 0, cut: 0, reRuns: 0 });
  });

  it("passes crashes before, between and after the steps with step(): replays, no re-runs", () => {
    const b = check(simulate(["before", "charge|ship", "ship|email", "after"], true));
    expect(b.violations).toEqual([]);
    expect(b.keysExactlyOnce).toBe(1);
    expect(b.perStep.charge?.replays).toBe(3);
    expect(b.crashes).toEqual({ before: 1, "charge|ship": 1, "ship|email": 1, after: 1 });
  });

  it("allows a re-run after a crash between a step's effect and its record, and counts it", () => {
    const b = check(simulate(["in:ship"], true));
    expect(b.violations).toEqual([]);
    expect(b.perStep.ship).toMatchObject({ runs: 2, arrivals: 2, cut: 1, reRuns: 1 });
    expect(b.keysReRun).toBe(1);
    expect(b.counts.get(KEY)).toBe(1); // every arrival explained
  });

  it("passes a crash after the record but before the step returned: the record is replayed", () => {
    const b = check(simulate(["in:charge"], true, true));
    expect(b.violations).toEqual([]);
    expect(b.perStep.charge).toMatchObject({ runs: 1, arrivals: 1, replays: 1, cut: 1 });
  });

  it("fails the control (lock() alone): a crash between steps charges twice", () => {
    const b = check(simulate(["charge|ship"], false));
    const text = b.violations.join("\n");
    expect(text).toMatch(/charge: ran 2 times without a crash between its effect and its record/);
    expect(text).toMatch(/charge: ran again 1 time\(s\) after a run of it had returned/);
    expect(text).toMatch(/charge: resolved to 2 different results/);
    expect(b.counts.get(KEY)).toBe(2);
  });

  it("fails the control even when the second run dies too (a run after a return)", () => {
    const b = check(simulate(["after", "in:charge"], false));
    expect(b.violations.join("\n")).toMatch(/charge: ran again 2 time\(s\) after a run/);
  });

  it("fails a step that saw another result than the recorded one", () => {
    const h = simulate([], true);
    const ship = h.arrivals.find((a) => a.step === "ship") as StepArrival;
    h.arrivals[h.arrivals.indexOf(ship)] = { ...ship, seen: "charge-999" };
    expect(check(h).violations.join("\n")).toMatch(
      /ship: run r2 saw charge-999, not the recorded charge charge-1/,
    );
  });

  it("fails a missing step, an arrival no run recorded, and one run arriving twice", () => {
    const h = simulate([], true);
    const email = h.arrivals.pop() as StepArrival;
    expect(check(h).violations.join("\n")).toMatch(
      /1 steps never landed: steps-sql\/order:t-0001 email/,
    );
    h.arrivals.push(email, email, { ...email, run: "ghost" });
    const text = check(h).violations.join("\n");
    expect(text).toMatch(/email: run r3 arrived 2 times/);
    expect(text).toMatch(/email: an arrival from run ghost, which no worker recorded/);
  });

  it("fails a re-run after a run still open in a live worker (no crash explains it)", () => {
    const h = simulate(["in:charge"], true);
    h.dead.clear(); // the first worker did not die: its run is open, the re-run unexplained
    const b = check(h);
    expect(b.violations.join("\n")).toMatch(/charge: ran 2 times .*1 returned, 1 open/);
    expect(b.unexplained).toBe(1);
  });

  it("holds for any crashes with step(); the control fails exactly when a step had returned (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...POINTS), { maxLength: 6 }),
        fc.boolean(),
        (points, recordThenDie) => {
          const withSteps = check(simulate(points, true, recordThenDie));
          expect(withSteps.violations).toEqual([]);
          expect(withSteps.unexplained).toBe(0);
          const cutsInWindow = points.filter((p) => p.startsWith("in:")).length;
          const reRuns = Object.values(withSteps.perStep).reduce((n, s) => n + s.reRuns, 0);
          expect(reRuns).toBeLessThanOrEqual(cutsInWindow);
          const control = check(simulate(points, false));
          expect(control.violations.length > 0).toBe(points.some(afterAReturn));
        },
      ),
    );
  });
});
