// Issue 32, item 3: DatastoreLock and FirestoreLock judge leases in the store's time. Three
// worker processes whose wall clocks are set tens of seconds apart (test/support/
// skewed-clock.mjs: -20 s, 0, +25 s) contend for one key with a 2.5 s lease on each emulator;
// each worker logs its holdings in the machine's true time, and holds a win only well inside
// its lease (sizing rule 1). With the store's clock the holdings never overlap and their
// fences rise. The control runs the same workers with the judgement before the issue (this
// process's Date.now(), put in through the internal CLOCK_OPTION): a worker ahead takes over
// a live lease at once, and two hold the key together.
import { type ChildProcess, fork } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emulatorOrSkip } from "../support/required.js";
import type { Holding, SkewRun, WorkerMessage } from "../support/skew-worker.js";
import { runScopedNames } from "./google-cases.js";

const here = dirname(fileURLToPath(import.meta.url));
/** Wall-clock offsets of the workers, in the order they join a run (150 ms apart). */
const SKEWS_MS = [-20_000, 0, 25_000];
const LEASE_MS = 2_500;
const RUN = { leaseMs: LEASE_MS, holdMs: 700, marginMs: 900 };

const [datastore, firestore] = await Promise.all([
  emulatorOrSkip("datastore"),
  emulatorOrSkip("firestore"),
]);
const fresh = runScopedNames();

interface Worker {
  child: ChildProcess;
  listener?: (message: WorkerMessage) => void;
}
const workers: Worker[] = [];

afterAll(async () => {
  for (const { child } of workers) child.kill("SIGKILL");
  await Promise.all([datastore?.stop(), firestore?.stop()]);
});

/** Fork the workers, each with its clock skew; resolves once all are ready. */
async function startWorkers(): Promise<void> {
  await Promise.all(
    SKEWS_MS.map((skew, index) => {
      const child = fork(join(here, "../support/skew-worker.ts"), [], {
        execArgv: ["--import", "tsx", "--import", join(here, "../support/skewed-clock.mjs")],
        env: { ...process.env, CLOCK_SKEW_MS: String(skew), SKEW_WORKER: String(index) },
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      });
      const worker: Worker = { child };
      workers.push(worker);
      child.on("message", (message: WorkerMessage) => worker.listener?.(message));
      return new Promise<void>((ready, failed) => {
        worker.listener = (message) => {
          if ("ready" in message) ready();
        };
        child.once("exit", (code) => failed(new Error(`worker ${index} exited (${code})`)));
      });
    }),
  );
}

/** What one run saw: every holding, and each worker's claims and wins. */
interface RunLog {
  holdings: Holding[];
  claims: number;
  wins: number;
}

/** One run on `store`: the workers join 150 ms apart and contend for `durationMs`. */
async function run(
  store: SkewRun["store"],
  clock: SkewRun["clock"],
  durationMs: number,
): Promise<RunLog> {
  const log: RunLog = { holdings: [], claims: 0, wins: 0 };
  const base = Date.now() + 200;
  const scope = fresh();
  await Promise.all(
    workers.map(
      (worker, index) =>
        new Promise<void>((finished, failed) => {
          worker.listener = (message) => {
            if ("holding" in message) log.holdings.push(message.holding);
            if (!("done" in message)) return;
            if (message.done.error !== undefined) failed(new Error(message.done.error));
            log.claims += message.done.claims;
            log.wins += message.done.wins;
            finished();
          };
          const request: SkewRun = {
            store,
            scope,
            key: "shared",
            clock,
            ...RUN,
            startAtMs: base + index * 150,
            untilMs: base + durationMs,
          };
          worker.child.send(request);
        }),
    ),
  );
  log.holdings.sort((a, b) => a.start - b.start || a.end - b.end);
  return log;
}

/** Holdings that began before an earlier one had ended: two holders at once. */
function overlaps(holdings: readonly Holding[]): [Holding, Holding][] {
  const found: [Holding, Holding][] = [];
  let latest: Holding | undefined;
  for (const holding of holdings) {
    if (latest !== undefined && holding.start < latest.end) found.push([latest, holding]);
    if (latest === undefined || holding.end > latest.end) latest = holding;
  }
  return found;
}

function summary(store: string, clock: string, log: RunLog): string {
  const by = SKEWS_MS.map(
    (skew, worker) => `${skew / 1000} s: ${log.holdings.filter((h) => h.worker === worker).length}`,
  ).join(", ");
  const abandoned = log.holdings.filter((h) => !h.released).length;
  return (
    `[clock-skew] ${store}, ${clock} clock: ${log.holdings.length} holdings (${by}; ` +
    `${abandoned} left to lapse), ${overlaps(log.holdings).length} overlapping, ` +
    `${log.claims} claims`
  );
}

for (const [store, emulator] of [
  ["datastore", datastore],
  ["firestore", firestore],
] as const) {
  describe.skipIf(!emulator)(`${store}: clocks tens of seconds apart`, () => {
    beforeAll(async () => {
      if (workers.length === 0) await startWorkers();
      // Each worker's client connects, and the emulator warms, before anything is timed.
      await run(store, "store", 1_000);
    }, 60_000);

    it("control: judged by each process's own clock, two hold the key at once", async () => {
      const log = await run(store, "process", 3_500);
      console.info(summary(store, "process", log));
      expect(overlaps(log.holdings).length).toBeGreaterThan(0);
    }, 30_000);

    it("judged by the store's clock: one holder at a time, the fence rising", async () => {
      const log = await run(store, "store", 8_000);
      console.info(summary(store, "store", log));
      expect(overlaps(log.holdings)).toEqual([]);
      for (let i = 1; i < log.holdings.length; i++) {
        expect(log.holdings[i]!.fencingId).toBeGreaterThan(log.holdings[i - 1]!.fencingId);
      }
      // Not vacuous: the key changed hands, between workers of different clocks.
      expect(log.holdings.length).toBeGreaterThanOrEqual(4);
      expect(new Set(log.holdings.map((h) => h.worker)).size).toBeGreaterThanOrEqual(2);
    }, 30_000);
  });
}
