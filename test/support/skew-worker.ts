// A worker of the clock-skew test (test/backends/google-clock-skew.test.ts), started with
// test/support/skewed-clock.mjs so that its wall clock is CLOCK_SKEW_MS off the machine's.
// On each run its parent asks for, it contends for one key on the emulator until a deadline:
// a win is held for a while (stopping well before its lease ends, measured from the start of
// the claim call on the monotonic clock), then released, or abandoned for the lease to lapse.
// Each holding goes to the parent as an interval in the machine's true time, with its fence.
import { Datastore } from "@google-cloud/datastore";
import { Firestore } from "@google-cloud/firestore";
import { DatastoreLock, type DatastoreLockOptions } from "../../src/backends/datastore/index.js";
import { FirestoreLock, type FirestoreLockOptions } from "../../src/backends/firestore/index.js";
import { CLOCK_OPTION } from "../../src/backends/google/store-clock.js";
import type { LockBackend } from "../../src/core/port.js";
import { PROJECT } from "./gcloud-emulator.js";
import { ProcessClock } from "./process-clock.js";

/** What the parent asks for: one run on one store, with the store's clock or the process's. */
export interface SkewRun {
  readonly store: "datastore" | "firestore";
  /** A namespace or collection of this run's own. */
  readonly scope: string;
  readonly key: string;
  /** `process`: the judgement before issue 32 (the control). */
  readonly clock: "store" | "process";
  readonly leaseMs: number;
  /** How long a win is held at most, ms. */
  readonly holdMs: number;
  /** Stop holding this long before the lease could end, counted from the claim's start. */
  readonly marginMs: number;
  /** Start claiming at this true time (epoch ms): the workers join one after another. */
  readonly startAtMs: number;
  /** Stop claiming at this true time (epoch ms). */
  readonly untilMs: number;
}

/** One holding, in the machine's true time. */
export interface Holding {
  readonly worker: number;
  readonly fencingId: number;
  readonly start: number;
  readonly end: number;
  readonly released: boolean;
}

export type WorkerMessage =
  | { readonly ready: true }
  | { readonly holding: Holding }
  | { readonly done: { readonly claims: number; readonly wins: number; readonly error?: string } };

const machineNow = (globalThis as unknown as Record<symbol, (() => number) | undefined>)[
  Symbol.for("clock-skew.trueNow")
];
if (machineNow === undefined) {
  throw new Error("start the worker with test/support/skewed-clock.mjs");
}
const trueNow: () => number = machineNow;
const worker = Number(process.env.SKEW_WORKER ?? "0");
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
const send = (message: WorkerMessage) => process.send?.(message);

let datastore: Datastore | undefined;
let firestore: Firestore | undefined;

function backendFor(run: SkewRun): LockBackend {
  const clock = run.clock === "process" ? { [CLOCK_OPTION]: new ProcessClock() } : {};
  if (run.store === "datastore") {
    datastore ??= new Datastore({ projectId: PROJECT });
    const options = { datastore, namespace: run.scope, ...clock } as DatastoreLockOptions;
    return new DatastoreLock(options);
  }
  firestore ??= new Firestore({ projectId: PROJECT });
  const options = { firestore, collection: run.scope, ...clock } as FirestoreLockOptions;
  return new FirestoreLock(options);
}

async function contend(run: SkewRun): Promise<{ claims: number; wins: number }> {
  const backend = backendFor(run);
  let claims = 0;
  let wins = 0;
  await sleep(Math.max(0, run.startAtMs - trueNow()));
  while (trueNow() < run.untilMs) {
    const asked = performance.now();
    const outcome = await backend.claim(run.key, run.leaseMs);
    claims++;
    if (outcome.status !== "won") {
      await sleep(20 + Math.random() * 40);
      continue;
    }
    wins++;
    const start = trueNow();
    // As sizing rule 1 asks: the work ends well inside the lease, on the monotonic clock.
    const left = asked + run.leaseMs - run.marginMs - performance.now();
    await sleep(Math.max(0, Math.min(run.holdMs * (0.6 + 0.4 * Math.random()), left)));
    const end = trueNow();
    // Mostly released; every third win abandoned, so that a lease has to lapse (a crash).
    const released = wins % 3 !== 0;
    send({ holding: { worker, fencingId: outcome.claim.fencingId, start, end, released } });
    if (released) await backend.release(outcome.claim);
  }
  return { claims, wins };
}

process.on("message", (run: SkewRun) => {
  contend(run).then(
    (counts) => send({ done: counts }),
    (error: unknown) => send({ done: { claims: 0, wins: 0, error: String(error) } }),
  );
});
send({ ready: true });
