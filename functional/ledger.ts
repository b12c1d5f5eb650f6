/**
 * What the workers' own records say happened to each key and each order, whatever the
 * supplier de-duplicated: how every body run and every send to the supplier ended, and
 * which wins were reclaims. Pure, so its rules are pinned by unit tests
 * (test/functional/ledger.test.ts) with doubles a broken lock would make.
 *
 * The promise it checks: each key's body runs to completion at most once, and each order
 * reaches the supplier once more than the number of its sends that ended in a crash (the
 * worker died before its complete) or in a release (the body failed and the gateway freed
 * the key). A run or send that completed, was fenced out, or is still open in a live worker
 * explains nothing.
 */
import type { WorkerEvent } from "./records.js";

/** How a body run or a send ended, read from the same worker's later events on its key. */
export type Ending =
  /** The store accepted the worker's complete. */
  | "completed"
  /** The body failed (or the complete did) and the gateway released the key, or logged why. */
  | "released"
  /** The worker died before any of the above: a crash between the start and the complete. */
  | "abandoned"
  /** The complete was refused: another delivery had reclaimed the key meanwhile. */
  | "fenced"
  /** None of the above, and the worker is still alive. */
  | "open";

export interface LedgerInput {
  /** Every worker's events, each worker's in the order it wrote them. */
  readonly events: readonly WorkerEvent[];
  /** Every POST the supplier received, per order id (`<scenario>/<orderId>`). */
  readonly arrivals: ReadonlyMap<string, number>;
  /** Worker processes that died during the run (killed or crashed themselves). */
  readonly deadPids: ReadonlySet<number>;
  /**
   * True for `lockInTransaction` sinks: a fenced-out run rolled its writes back, so it
   * explains a later run like a crash does.
   */
  readonly fencedRunsRollBack?: boolean;
}

export interface Ledger {
  /** Body runs whose worker died before their complete: the runs a redelivery may repeat. */
  readonly runsAbandoned: number;
  /** Every POST the supplier received for these orders. */
  readonly arrivals: number;
  readonly sendsAbandoned: number;
  /** Orders that a dead worker had sent and a later worker sent again. */
  readonly ordersResentAfterCrash: number;
  readonly reclaimsAfterRelease: number;
  readonly reclaimsAfterLapse: number;
  readonly violations: string[];
}

const ENDINGS = new Set<WorkerEvent["kind"]>(["completed", "release", "failed", "fenced_out"]);

function endingOf(
  events: readonly WorkerEvent[],
  start: number,
  deadPids: ReadonlySet<number>,
): Ending {
  const { pid, key } = events[start] as WorkerEvent;
  for (let i = start + 1; i < events.length; i++) {
    const e = events[i] as WorkerEvent;
    if (e.pid !== pid || e.key !== key || !ENDINGS.has(e.kind)) continue;
    if (e.kind === "completed") return "completed";
    if (e.kind === "fenced_out") return "fenced";
    return "released";
  }
  return deadPids.has(pid) ? "abandoned" : "open";
}

function tally<K>(map: Map<K, Record<Ending, number>>, at: K, ending: Ending): void {
  const counts = map.get(at) ?? { completed: 0, released: 0, abandoned: 0, fenced: 0, open: 0 };
  counts[ending] += 1;
  map.set(at, counts);
}

const sum = (values: Iterable<number>) => {
  let n = 0;
  for (const v of values) n += v;
  return n;
};

export function ledger({
  events,
  arrivals,
  deadPids,
  fencedRunsRollBack = false,
}: LedgerInput): Ledger {
  const violations: string[] = [];
  const runs = new Map<string, Record<Ending, number>>();
  const sends = new Map<string, Record<Ending, number>>();
  for (const [i, e] of events.entries()) {
    if (e.kind === "body") tally(runs, e.key, endingOf(events, i, deadPids));
    if (e.kind === "sending" && e.order !== undefined) {
      tally(sends, e.order, endingOf(events, i, deadPids));
    }
  }

  // Each key: at most one run that went on (completed, fenced out, or still open).
  for (const [key, c] of runs) {
    const wentOn = c.completed + (fencedRunsRollBack ? 0 : c.fenced) + c.open;
    if (wentOn > 1)
      violations.push(
        `${key}: the body ran ${wentOn} times without a crash or a release between (${c.completed} completed, ${c.fenced} fenced out, ${c.open} open)`,
      );
  }

  // Each order: every arrival beyond the first is a send that ended in a crash or a release.
  let ordersResentAfterCrash = 0;
  for (const [order, arrived] of arrivals) {
    const c = sends.get(order) ?? { completed: 0, released: 0, abandoned: 0, fenced: 0, open: 0 };
    const sent = sum(Object.values(c));
    if (arrived > sent)
      violations.push(`${order}: ${arrived} arrivals at the supplier, ${sent} sends recorded`);
    const explained = c.abandoned + c.released;
    if (arrived - 1 > explained)
      violations.push(
        `${order}: reached the supplier ${arrived} times; only ${explained} of its sends ended in a crash or a release (${c.completed} completed, ${c.fenced} fenced out, ${c.open} open)`,
      );
    if (arrived > 1 && c.abandoned > 0) ordersResentAfterCrash += 1;
  }

  // Wins per key, in fence order: a fence is never handed out twice, and a win over an
  // earlier one is a reclaim, after a release of that claim or after its lease lapsed.
  const winsByKey = new Map<string, number[]>();
  const released = new Set<string>();
  for (const e of events) {
    if (e.kind === "won" && e.fence !== undefined)
      winsByKey.set(e.key, [...(winsByKey.get(e.key) ?? []), e.fence]);
    if (e.kind === "release") released.add(`${e.key}#${e.fence}`);
  }
  let reclaimsAfterRelease = 0;
  let reclaimsAfterLapse = 0;
  for (const [key, fences] of winsByKey) {
    fences.sort((a, b) => a - b);
    for (let i = 1; i < fences.length; i++) {
      const previous = fences[i - 1] as number;
      if (fences[i] === previous) violations.push(`${key}: two wins with fence ${previous}`);
      else if (released.has(`${key}#${previous}`)) reclaimsAfterRelease += 1;
      else reclaimsAfterLapse += 1;
    }
  }

  const all = (map: Map<string, Record<Ending, number>>, ending: Ending) =>
    sum([...map.values()].map((c) => c[ending]));
  return {
    runsAbandoned: all(runs, "abandoned"),
    arrivals: sum(arrivals.values()),
    sendsAbandoned: all(sends, "abandoned"),
    ordersResentAfterCrash,
    reclaimsAfterRelease,
    reclaimsAfterLapse,
    violations,
  };
}
