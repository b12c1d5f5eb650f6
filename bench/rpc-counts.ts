/**
 * Round trips counted, not argued: the gRPC calls each path of a delivery makes on the
 * Datastore, Firestore and Spanner emulators, counted on the wire by an HTTP/2 proxy between
 * the client and the emulator (test/support/rpc-counter.ts), beside the fewest the store's API
 * allows for that path and why. Deterministic: a count, not a timing, so the test
 * (test/bench/rpc-counts.test.ts) holds every path to its figure and a new round trip fails it.
 *
 *   npm run bench -- --only rpc [--out FILE.md]
 */
import { Datastore } from "@google-cloud/datastore";
import { Firestore } from "@google-cloud/firestore";
import { Spanner } from "@google-cloud/spanner";
import { DatastoreLock } from "../src/backends/datastore/index.js";
import { FirestoreLock } from "../src/backends/firestore/index.js";
import { SpannerLock } from "../src/backends/spanner/index.js";
import { type LockBackend, lock, mutex, once } from "../src/index.js";
import { type Emulator, PROJECT, startEmulator } from "../test/support/gcloud-emulator.js";
import { startRpcCounter } from "../test/support/rpc-counter.js";
import { freshDatabase, startSpannerEmulator } from "../test/support/spanner-emulator.js";

process.env.METADATA_SERVER_DETECTION ??= "none";

export const PATHS = ["first", "duplicate", "held", "mutex cycle", "once duplicate"] as const;
export type PathName = (typeof PATHS)[number];
export const STORES = ["datastore", "firestore", "spanner"] as const;
export type StoreName = (typeof STORES)[number];

/** One path's calls on one store: the total and the calls by method. */
export interface PathCount {
  total: number;
  byMethod: Record<string, number>;
}

export type StoreCounts = Record<PathName, PathCount>;

const silent = { info() {}, warn() {}, error() {} };

/** Run each path once on `backend`, counting its calls; the client is warmed up first. */
async function countPaths(
  backend: LockBackend,
  counter: { reset(): void; total(): number; counts(): Record<string, number> },
): Promise<StoreCounts> {
  const options = { backend, leaseMs: 60_000, logger: silent };
  const run = Math.random().toString(36).slice(2, 8);
  // Sessions, channels and the first transaction's set-up are not a delivery's cost.
  await lock(`warm-${run}`, options, () => undefined);
  await lock(`warm-${run}`, options, () => undefined).catch(() => undefined);
  await once(`warm-once-${run}`, options, () => "r");
  const counts: Partial<StoreCounts> = {};
  const count = async (path: PathName, call: () => Promise<unknown>): Promise<void> => {
    counter.reset();
    await call().catch(() => undefined);
    counts[path] = { total: counter.total(), byMethod: counter.counts() };
  };
  await count("first", () => lock(`first-${run}`, options, () => undefined));
  await count("duplicate", () => lock(`first-${run}`, options, () => undefined));
  const noop = (): void => {};
  let release: () => void = noop;
  const holding = lock(
    `held-${run}`,
    options,
    () => new Promise<void>((resolve) => (release = resolve)),
  );
  // Count once the holder's body runs: its claim has landed.
  while (release === noop) await new Promise((resolve) => setTimeout(resolve, 10));
  await count("held", () => lock(`held-${run}`, options, () => undefined));
  release();
  await holding;
  await count("mutex cycle", () => mutex(`mutex-${run}`, options, () => undefined));
  await once(`once-${run}`, options, () => "result");
  await count("once duplicate", () => once(`once-${run}`, options, () => "again"));
  return counts as StoreCounts;
}

/** Count every path on one store's emulator; starts and ends the emulator. */
export async function countStore(store: StoreName): Promise<StoreCounts> {
  let emulator: Emulator | undefined;
  let counter: Awaited<ReturnType<typeof startRpcCounter>> | undefined;
  const closers: (() => Promise<unknown> | unknown)[] = [];
  // The client finds the counter through this variable; left set, it would send the bench's
  // later emulated cells to a counter that is gone ("is set but nothing answers there").
  const variable = `${store.toUpperCase()}_EMULATOR_HOST`;
  const before = process.env[variable];
  try {
    if (store === "spanner") {
      emulator = await startSpannerEmulator();
      counter = await startRpcCounter(emulator.host);
      process.env.SPANNER_EMULATOR_HOST = counter.host;
      const spanner = new Spanner({ projectId: PROJECT });
      closers.push(() => spanner.close());
      const database = await freshDatabase(spanner, []);
      closers.push(() => database.close());
      const backend = new SpannerLock({ database, table: "records" });
      await backend.ensureSchema();
      return await countPaths(backend, counter);
    }
    emulator = await startEmulator(store);
    counter = await startRpcCounter(emulator.host);
    if (store === "datastore") {
      process.env.DATASTORE_EMULATOR_HOST = counter.host;
      const datastore = new Datastore({ projectId: PROJECT });
      return await countPaths(new DatastoreLock({ datastore, namespace: "rpc" }), counter);
    }
    process.env.FIRESTORE_EMULATOR_HOST = counter.host;
    const firestore = new Firestore({ projectId: PROJECT });
    closers.push(() => firestore.terminate());
    return await countPaths(new FirestoreLock({ firestore, collection: "rpc" }), counter);
  } finally {
    for (const close of closers.reverse()) await Promise.resolve(close()).catch(() => undefined);
    await counter?.close();
    await emulator?.stop();
    if (before === undefined) delete process.env[variable];
    else process.env[variable] = before;
  }
}

/** A path's calls today, the fewest the store's API allows, and why they differ. */
export interface PathBudget {
  readonly calls: number;
  readonly fewest: number;
  readonly why?: string;
}

/**
 * What each path costs today (the test holds every path to it) and the fewest calls the
 * store's API allows. Reads are "strong" everywhere: a stale read could answer a redelivery
 * `held` or absent after the key completed.
 */
export const BUDGET: Record<StoreName, Record<PathName, PathBudget>> = {
  datastore: {
    first: {
      calls: 5,
      fewest: 4,
      why: "the claim is a Lookup and an insert; the complete's transaction is begun with a BeginTransaction of its own, because the client's inline begin (newTransaction on the Lookup) left the emulator holding a second transaction's lock (the commit then met 'Transaction lock timeout')",
    },
    duplicate: { calls: 1, fewest: 1 },
    held: { calls: 1, fewest: 1 },
    "mutex cycle": { calls: 5, fewest: 4, why: "the release's transaction, as the complete's" },
    "once duplicate": { calls: 1, fewest: 1 },
  },
  firestore: {
    first: { calls: 2, fewest: 2 },
    duplicate: {
      calls: 2,
      fewest: 1,
      why: "the claim tries create() first, since most deliveries are first ones: a duplicate pays that refused create before its read. Reading first would make a duplicate one call and a first delivery three",
    },
    held: { calls: 2, fewest: 1, why: "as a duplicate" },
    "mutex cycle": { calls: 2, fewest: 2 },
    "once duplicate": { calls: 2, fewest: 1, why: "as a duplicate" },
  },
  spanner: {
    first: {
      calls: 4,
      fewest: 3,
      why: "the claim reads first (a strong single-use query), then inserts the absent key in one Commit; a blind insert would save that read on a first delivery and cost every duplicate a second call",
    },
    duplicate: { calls: 1, fewest: 1 },
    held: { calls: 1, fewest: 1 },
    "mutex cycle": { calls: 4, fewest: 3, why: "as a first delivery's claim" },
    "once duplicate": { calls: 1, fewest: 1 },
  },
};

/** The markdown table of a run: each path's calls by method, beside its budget. */
export function rpcCountsMarkdown(counts: Record<StoreName, StoreCounts>): string {
  const lines = [
    "| store | path | calls | by method | fewest the API allows | why more |",
    "| --- | --- | ---: | --- | ---: | --- |",
  ];
  for (const store of STORES) {
    for (const path of PATHS) {
      const count = counts[store][path];
      const budget = BUDGET[store][path];
      const methods = Object.entries(count.byMethod)
        .map(([method, n]) => `${method} ${n}`)
        .join(", ");
      lines.push(
        `| ${store} | ${path} | ${count.total} | ${methods} | ${budget.fewest} | ${count.total > budget.fewest ? (budget.why ?? "") : ""} |`,
      );
    }
  }
  return lines.join("\n");
}
