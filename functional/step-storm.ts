/**
 * The step storm (issue 30): a three-step handler (charge → ship → email, ./workers/steps.ts)
 * whose effects go into three sinks that do not de-duplicate, under SIGKILLs before, between,
 * inside and after its steps, on SqlLock (PostgreSQL) and on DatastoreLock (the emulator).
 * Its books are ./step-ledger.ts; `--steps lock` is the control, the same handler under the
 * surface's lock alone, on which they must fail.
 */
import { STEP_SINKS, type WorkerEvent } from "./records.js";
import {
  type Context,
  expectAtLeast,
  expectEqual,
  ids,
  publishOrders,
  pushTopic,
  type Scenario,
  shuffled,
} from "./scenarios.js";
import { type StepArrival, type StepLedger, stepLedger } from "./step-ledger.js";

export const STEPS = Object.keys(STEP_SINKS) as (keyof typeof STEP_SINKS)[];

/**
 * Where a worker kills itself, round robin over the messages chosen to crash: the issue's
 * points (before the first step, between steps, after the last before the ack) and inside
 * each step, after its effect and before step() records it — the window where a re-run is
 * honest, and counted as one.
 */
export const CRASH_POINTS = [
  "before",
  "in:charge",
  "charge|ship",
  "in:ship",
  "ship|email",
  "in:email",
  "after",
] as const;
/** The points where a step that ran must never run again: no step is mid-way there. */
export const BETWEEN_POINTS: readonly string[] = CRASH_POINTS.filter((p) => !p.startsWith("in:"));

export interface StepStormOptions {
  readonly store: "sql" | "datastore";
  readonly orders: number;
  /** Messages whose first delivery to reach their crash point kills its worker there. */
  readonly crashes: number;
  /** The control: the handler without step(), under the surface's lock alone. */
  readonly control: boolean;
}

export const stepScenarioName = (store: StepStormOptions["store"]) => `steps-${store}`;

export function stepStorm(options: StepStormOptions): Scenario {
  const name = stepScenarioName(options.store);
  const storeName = options.store === "sql" ? "SqlLock (PostgreSQL)" : "DatastoreLock (emulator)";
  let books: StepLedger | undefined;
  let arrivals: StepArrival[] = [];
  return {
    name,
    claim: options.control
      ? `the control: the three-step handler under the surface's lock alone (no step()) on ${storeName}, ${options.orders} messages, ${options.crashes} workers killed before, inside, between and after the steps: the step checks must FAIL (a redelivery after a crash between steps charges again)`
      : `a three-step handler (charge → ship → email, each step() into a sink that does not de-duplicate) on ${storeName}, ${options.orders} messages, ${options.crashes} workers killed before, inside, between and after the steps, others at random: every step's effect landed once per message, again only after a crash between that step's effect and its record, and each later step saw the earlier step's recorded result`,
    async publish(ctx) {
      const topic = await pushTopic(ctx, name, [{ name: `${name}-${ctx.run}` }]);
      const orderIds = ids(options.store === "sql" ? "q" : "d", options.orders);
      const chosen = shuffled(orderIds, ctx.random).slice(0, options.crashes);
      const crashAt = new Map(chosen.map((id, i) => [id, CRASH_POINTS[i % CRASH_POINTS.length]]));
      const published = await publishOrders(
        topic,
        name,
        orderIds.map((orderId) => {
          const point = crashAt.get(orderId);
          return { orderId, attributes: { keyBy: "order", ...(point ? { crashAt: point } : {}) } };
        }),
      );
      return { published, subscriptions: [`${name}-${ctx.run}`] };
    },
    async readSink(ctx) {
      arrivals = await ctx.database.stepArrivals(name);
    },
    async sink(ctx: Context, records) {
      const keyOf = (orderId: string) => `${name}/order:${orderId}`;
      books = stepLedger({
        steps: STEPS,
        keys: records.published.map((m) => keyOf(m.orderId)),
        events: records.events,
        arrivals,
        deadPids: records.deadPids,
      });
      const counts = new Map(
        records.published.map((m) => [m.orderId, books?.counts.get(keyOf(m.orderId)) ?? 0]),
      );
      const violations = [...books.violations];
      const notes: Record<string, unknown> = {
        mode: options.control ? "lock() alone (control)" : "step()",
        perStep: books.perStep,
        selfCrashesAt: books.crashes,
        messagesEveryStepOnce: books.keysExactlyOnce,
        messagesWithAStepReRun: books.keysReRun,
        unexplainedArrivals: books.unexplained,
        stepFencedOut: records.events.filter(
          (e: WorkerEvent) => e.kind === "fenced_out" && e.key.startsWith('["step",'),
        ).length,
      };
      if (options.store === "sql") {
        // One DONE record per delivery key, and with step() one per step of it.
        const done = await ctx.database.stepDoneRecords();
        notes.doneRecords = done;
        const expected = options.orders * (options.control ? 1 : 1 + STEPS.length);
        if (done !== expected) violations.push(`${done} DONE records, expected ${expected}`);
      }
      return { counts, notes, violations };
    },
    check(f) {
      if (!books) return;
      const reRuns = Object.values(books.perStep).reduce((n, s) => n + s.reRuns, 0);
      const cut = Object.values(books.perStep).reduce((n, s) => n + s.cut, 0);
      f.notes.summary = `${name}${options.control ? " (control)" : ""}: ${f.messages} messages ran their handler ${f.bodyRuns} times; ${STEPS.map((s) => `${s} ${books?.perStep[s]?.runs ?? 0} runs / ${books?.perStep[s]?.arrivals ?? 0} arrivals / ${books?.perStep[s]?.replays ?? 0} replays`).join(", ")}. Workers killed themselves ${f.crashes} times (${Object.entries(
        books.crashes,
      )
        .map(([p, n]) => `${p} ${n}`)
        .join(
          ", ",
        )}); ${cut} step runs were cut before their record; of ${reRuns} arrivals beyond a message's first, ${reRuns - books.unexplained} followed such a cut run${books.unexplained > 0 ? ` and ${books.unexplained} followed none` : ""}. ${books.keysExactlyOnce} of ${f.messages} messages had every step's effect exactly once.`;
      if (options.crashes >= CRASH_POINTS.length)
        for (const point of CRASH_POINTS)
          expectAtLeast(f, `self-crashes at ${point}`, books.crashes[point] ?? 0, 1);
      expectEqual(f, "messages with a step missing", books.missing, 0);
    },
  };
}
