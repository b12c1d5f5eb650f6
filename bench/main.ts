/**
 * The benchmark suite: every backend through one driver, their floors and peers in the same
 * run, the scale runs and the gateway's own cost; rewrites BENCHMARKS.md and its charts.
 *
 *   npm run bench                      full run (about 35 minutes), rewrites BENCHMARKS.md
 *   npm run bench -- --quick [--out FILE.md]   about 2 minutes
 *   npm run bench -- --smoke           seconds; proves it runs, writes nothing (CI)
 *   npm run bench -- --only redis,postgres [--out FILE.md]
 *   npm run bench -- --only memory,redis --repeat 3   the selection 3 times, with the spread
 *   npm run bench -- --in-flight 16    only that many operations in flight (default 1,16,64)
 *
 * Only the full run of everything with no --out writes into the repository: BENCHMARKS.md,
 * its charts and docs/benchmarks/transaction.md. Any run with --out, --only, --in-flight,
 * --quick or --smoke writes next to --out (FILE.md, FILE-throughput.svg, FILE-scale.svg,
 * FILE-transaction.md) or, without --out, nothing: it prints the target table (and the
 * transaction report) instead. Every file written names the commit the run measured and
 * whether the tree had uncommitted changes (bench/provenance.ts).
 * --in-flight runs no scale run unless `scale` is named.
 * --only takes backend names (below), `scale`, `gateway`, `telemetry`, `transaction` and
 * `once` and `rpc`; a backend's name also selects its scale run (redis, postgres, memory). `transaction`
 * is lockInTransaction against lock() plus its own transaction on every SQL dialect
 * (bench/transaction.ts; `npm run bench:transaction` is `--only transaction`). `once` is a
 * once() duplicate (a 1,002-byte and a 102-byte result replayed) against a lock() duplicate on
 * InMemoryLock, Redis and PostgreSQL, with the decode of each result alone (bench/once.ts), a
 * section and a target of the report. `rpc` counts each path's gRPC calls on the Datastore,
 * Firestore and Spanner emulators (bench/rpc-counts.ts), reported in BENCHMARKS.md.
 *
 *   npm run bench -- --only gateway --against <git-ref> [--quick] [--out FILE.md]
 *
 * --against compares the gateway section of two builds: the working tree's and <git-ref>'s
 * (its src/ bundled the same way against the same node_modules, bench/published-build.ts),
 * each in a process of its own (bench/gateway-side.ts), every figure timed for both back to
 * back, the order swapped each round (bench/gateway-against.ts). It prints each figure for both and new ÷ old per CPU-second,
 * median [min–max] over the rounds, read by judge() (bench/comparison.ts): slower beyond noise
 * only when every round is; a control (the bench's own code on both sides) shows the run's
 * noise. It writes --out FILE.md when given, never BENCHMARKS.md. About 1.5 minutes at full
 * size (11 rounds); --quick (7 rounds of shorter samples) is too noisy on a busy machine to read.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { datastoreBench, firestoreBench } from "./backends/google.js";
import { memoryBench } from "./backends/memory.js";
import { redisBench, redisClusterBench } from "./backends/redis.js";
import { spannerBench } from "./backends/spanner.js";
import { mariadbBench, postgresBench, sqliteBench } from "./backends/sql.js";
import { scaleChart, throughputChart } from "./chart.js";
import { renderComparison } from "./comparison.js";
import { gatewayBench } from "./gateway.js";
import { gatewayAgainst } from "./gateway-against.js";
import { onceBench } from "./once.js";
import { onceSection } from "./once-report.js";
import { provenanceLine, readProvenance } from "./provenance.js";
import { type RunResult, renderMarkdown } from "./report.js";
import { countStore, STORES, type StoreCounts } from "./rpc-counts.js";
import {
  fmtMs,
  fmtRate,
  interleaved,
  loadAverage,
  progress,
  SETTINGS,
  type Settings,
} from "./runner.js";
import { memoryScale, postgresScale, redisScale, type ScaleResult } from "./scale.js";
import { type BackendBench, type BackendResult, cellKey, PATHS } from "./suite.js";
import { telemetryBench } from "./telemetry.js";
import { transactionBench } from "./transaction.js";

const BACKENDS: BackendBench[] = [
  memoryBench,
  sqliteBench,
  redisBench,
  redisClusterBench,
  postgresBench,
  mariadbBench,
  datastoreBench,
  firestoreBench,
  spannerBench,
];
const SCALES: Record<string, (settings: Settings) => Promise<ScaleResult>> = {
  memory: memoryScale,
  redis: redisScale,
  postgres: postgresScale,
};

function parseArgs(argv: string[]) {
  const flag = (name: string) => argv.includes(name);
  const value = (name: string) => {
    const k = argv.indexOf(name);
    const v = k === -1 ? undefined : argv[k + 1];
    if (k !== -1 && (v === undefined || v.startsWith("--")))
      throw new Error(`${name} needs a value`);
    return v;
  };
  const known = new Set([
    "--quick",
    "--smoke",
    "--only",
    "--out",
    "--repeat",
    "--in-flight",
    "--against",
    "--help",
  ]);
  const takesValue = new Set(["--only", "--out", "--repeat", "--in-flight", "--against"]);
  for (const [k, a] of argv.entries()) {
    if (a.startsWith("--") && !known.has(a)) throw new Error(`unknown option ${a}`);
    if (!a.startsWith("--") && !takesValue.has(argv[k - 1] ?? "")) {
      throw new Error(`unexpected argument ${a}`);
    }
  }
  const repeatText = value("--repeat") ?? "1";
  const repeat = Number(repeatText);
  if (!/^\d+$/.test(repeatText) || repeat < 1 || repeat > 20) {
    throw new Error(`--repeat: expected a whole number from 1 to 20, got ${repeatText}`);
  }
  const inFlightText = value("--in-flight");
  const inFlight = inFlightText?.split(",").map((text) => {
    const n = Number(text.trim());
    if (!/^\d+$/.test(text.trim()) || n < 1 || n > 256) {
      throw new Error(`--in-flight: expected whole numbers from 1 to 256, got ${inFlightText}`);
    }
    return n;
  });
  const only = value("--only")
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const names = new Set([
    ...BACKENDS.map((b) => b.id),
    "scale",
    "gateway",
    "telemetry",
    "transaction",
    "once",
    "rpc",
  ]);
  for (const n of only ?? []) {
    if (!names.has(n))
      throw new Error(`--only: unknown ${n}; choose from ${[...names].join(", ")}`);
  }
  const against = value("--against");
  if (against !== undefined) {
    // The other sections have no second build to time: asking for them would be ignored.
    if (only?.length !== 1 || only[0] !== "gateway") {
      throw new Error("--against compares the gateway section alone: give --only gateway");
    }
    if (repeat > 1 || inFlight !== undefined) {
      throw new Error("--against takes neither --repeat nor --in-flight");
    }
  }
  const size: Settings["size"] = flag("--smoke") ? "smoke" : flag("--quick") ? "quick" : "full";
  return { size, only, out: value("--out"), repeat, inFlight, against, help: flag("--help") };
}

const args = parseArgs(process.argv.slice(2));
if (args.help) {
  console.log(
    "npm run bench -- [--quick | --smoke] [--only a,b] [--repeat N] [--in-flight 1,16] [--out FILE.md]\n" +
      "npm run bench -- --only gateway --against <git-ref> [--quick | --smoke] [--out FILE.md]\n" +
      `names: ${BACKENDS.map((b) => b.id).join(", ")}, scale, gateway, telemetry, transaction, once`,
  );
  process.exit(0);
}
const settings: Settings = args.inFlight
  ? { ...SETTINGS[args.size], concurrency: args.inFlight }
  : SETTINGS[args.size];
const selected = (id: string) => args.only === undefined || args.only.includes(id);
const backends = BACKENDS.filter((b) => selected(b.id));
// A backend's name brings its scale run, unless --in-flight narrows the run to its cells.
const scales = Object.keys(SCALES).filter(
  (id) => selected("scale") || (args.inFlight === undefined && args.only?.includes(id)),
);
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const published = join(root, "BENCHMARKS.md");
// Only the full run of everything, with no --out, writes into the repository.
const out =
  args.out ??
  (args.only === undefined && args.inFlight === undefined && args.size === "full"
    ? published
    : undefined);
/** Where the run's other files go: docs/benchmarks/ beside BENCHMARKS.md, else beside --out. */
const sideFile = (name: string): string | undefined => {
  if (out === undefined) return undefined;
  if (out === published) return join(root, "docs", "benchmarks", name);
  return join(dirname(out), `${out.replace(/^.*\//, "").replace(/\.md$/, "")}-${name}`);
};
/** A section's own report: written where the run's other files go, else printed. */
const writeSideReport = (name: string, markdown: string): void => {
  const file = sideFile(name);
  if (file === undefined) {
    console.log(markdown);
    return;
  }
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, markdown);
  progress(`wrote ${relative(process.cwd(), file)}`);
};
// Read before anything is written: the tree the run measures.
const provenance = readProvenance(root);
const provenanceText = provenanceLine(provenance);
const command = `npm run bench${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`;

let failures = 0;
let stopping: (() => Promise<void>) | undefined;
// Exit through process.exit, so the temporary builds and trees are removed (on "exit").
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    progress(`${signal}: cleaning up`);
    void (stopping?.() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}

if (args.against !== undefined) {
  if (out !== undefined && resolve(out) === published) {
    throw new Error("--against never writes BENCHMARKS.md: give --out another file");
  }
  progress(
    `${provenanceText.replace(/\*\*/g, "")}\n${args.size} run: the gateway, the working tree against ${args.against}; load ${loadAverage()}`,
  );
  const comparison = await gatewayAgainst(args.against, settings, { command, provenance });
  const markdown = renderComparison(comparison);
  console.log(markdown);
  if (out !== undefined) {
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, markdown);
    progress(`wrote ${relative(process.cwd(), out)}`);
  }
  progress(`done in ${comparison.seconds.toFixed(0)} s, load ${comparison.loadAtEnd}`);
  process.exit(0);
}

// A rough duration up front: cells × systems × rounds × (warm-up + timed), plus set-up.
const systemsGuess: Record<string, number> = {
  redis: 9,
  "redis-cluster": 6,
  memory: 2,
  firestore: 2,
};
const cellSeconds = (settings.rounds * (settings.warmupMs + settings.roundMs)) / 1000;
const estimate =
  backends.reduce(
    (sum, b) => sum + (systemsGuess[b.id] ?? 3) * PATHS.length * settings.concurrency.length,
    0,
  ) *
    cellSeconds +
  scales.length * (settings.scaleSizes.length * 2 * cellSeconds + (args.size === "full" ? 15 : 5)) +
  // Three dialects, two contenders; the full run takes twice the rounds.
  (selected("transaction")
    ? 3 * 2 * settings.concurrency.length * cellSeconds * (args.size === "full" ? 2 : 1)
    : 0) +
  // Three stores, three contenders; the full run takes twice the rounds.
  (selected("once")
    ? 3 * 3 * settings.concurrency.length * cellSeconds * (args.size === "full" ? 2 : 1)
    : 0);
progress(
  `${provenanceText.replace(/\*\*/g, "")}\n${args.size} run${args.repeat > 1 ? ` ×${args.repeat}` : ""}: ${backends.map((b) => b.id).join(", ") || "no backends"}${scales.length ? `; scale: ${scales.join(", ")}` : ""}${selected("gateway") ? "; gateway" : ""}${selected("telemetry") ? "; telemetry" : ""}${selected("transaction") ? "; transaction" : ""}${selected("once") ? "; once" : ""}; about ${Math.round((args.repeat * estimate) / 60 + 0.4)} min of measuring plus start-ups; load ${loadAverage()}`,
);

/** One pass over the selection: the gateway, every backend, the scale runs. */
async function measure(pass: number): Promise<RunResult> {
  const started = Date.now();
  const run: RunResult = {
    settings,
    command,
    provenance,
    date: new Date().toISOString(),
    machine: `${os.cpus()[0]?.model.trim() ?? "?"}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}`,
    node: process.version,
    loadAtStart: loadAverage(),
    loadAtEnd: "",
    seconds: 0,
    backends: [],
    scales: [],
    scaleErrors: [],
    charts: {},
  };
  if (args.repeat > 1) progress(`pass ${pass + 1} of ${args.repeat} (load ${run.loadAtStart})`);
  if (selected("gateway")) {
    progress("gateway: lock() over an instant backend");
    run.gateway = await gatewayBench(settings.gatewayCycles, settings.rounds);
    progress(
      `gateway: ${fmtRate(run.gateway.lock)} lock() cycles/s (floor ${fmtRate(run.gateway.floor)})`,
    );
  }

  if (selected("telemetry")) {
    progress("telemetry: the gateway with telemetry off, on without an SDK, and on with the SDK");
    const rounds = args.size === "smoke" ? 1 : args.size === "quick" ? 5 : 15;
    run.telemetry = await telemetryBench(Math.round(settings.gatewayCycles / 16), rounds);
    const t = run.telemetry;
    progress(
      `telemetry: lock() off ${fmtRate(t.lock.off)}/s, no SDK ${fmtRate(t.lock.noSdk)}/s (${(t.lock.noSdk / t.lock.off).toFixed(3)}×), SDK ${fmtRate(t.lock.sdk)}/s (${(t.lock.sdk / t.lock.off).toFixed(3)}×); push off ${fmtRate(t.push.off)}/s, no SDK ${(t.push.noSdk / t.push.off).toFixed(3)}×, SDK ${(t.push.sdk / t.push.off).toFixed(3)}×`,
    );
  }

  if (selected("transaction")) {
    progress("transaction: lockInTransaction vs lock() + its own transaction, each SQL dialect");
    // The ratio sits near 1: the full run takes twice the rounds to keep it steady.
    const rounds = args.size === "full" ? 2 * settings.rounds : settings.rounds;
    const { markdown, failed, ratios } = await transactionBench(
      { ...settings, rounds },
      { command: run.command, provenance: provenanceText },
    );
    if (failed) failures++;
    run.transaction = ratios;
    writeSideReport("transaction.md", markdown);
  }

  if (selected("once")) {
    progress(
      "once: once() duplicates (1 KiB and 100 B results) against a lock() duplicate, InMemoryLock, Redis, PostgreSQL",
    );
    // The ratio sits near 1: the full run takes twice the rounds to keep it steady.
    const rounds = args.size === "full" ? 2 * settings.rounds : settings.rounds;
    const { run: once, failed } = await onceBench({ ...settings, rounds });
    if (failed) failures++;
    run.once = once;
  }

  // Counts, not timings: the smoke run leaves them to the test (test/bench/rpc-counts.test.ts).
  if (selected("rpc") && args.size !== "smoke") {
    progress("rpc: gRPC calls of each path on the Datastore, Firestore and Spanner emulators");
    const counts = {} as Record<(typeof STORES)[number], StoreCounts>;
    for (const store of STORES) counts[store] = await countStore(store);
    run.rpc = counts;
  }

  for (const [index, bench] of backends.entries()) {
    const result: BackendResult = {
      id: bench.id,
      title: bench.title,
      versions: "",
      floorNote: "",
      loadAtStart: loadAverage(),
      seconds: 0,
      serverCpu: false,
      contenders: [],
      cells: new Map(),
    };
    run.backends.push(result);
    const t0 = Date.now();
    progress(
      `[${index + 1}/${backends.length}] ${bench.title}: starting (load ${result.loadAtStart})`,
    );
    try {
      const started = await bench.start(settings);
      stopping = started.stop;
      result.serverCpu = (await started.serverCpu?.()) !== undefined;
      result.versions = started.versions;
      result.floorNote = started.floorNote;
      try {
        for (const c of settings.concurrency) {
          const session = await started.open(c);
          try {
            for (const who of session.contenders) {
              if (!result.contenders.some((x) => x.name === who.name)) {
                result.contenders.push({
                  name: who.name,
                  role: who.role,
                  ...(who.floor === undefined ? {} : { floor: who.floor }),
                });
              }
            }
            for (const path of PATHS) {
              const ops = session.contenders.flatMap((who) => {
                const op = who.ops[path];
                return op === undefined ? [] : [[who.name, op] as const];
              });
              const results = await interleaved(settings, ops, c, started.serverCpu);
              for (const [name, r] of results) result.cells.set(cellKey(path, c, name), r);
              progress(
                `  ${bench.id} ${path} ×${c}: ${[...results]
                  .map(([name, r]) => `${name} ${fmtRate(r.opsPerSec)}/s p50 ${fmtMs(r.p50)} ms`)
                  .join(" | ")}`,
              );
            }
          } finally {
            await session.close();
          }
        }
      } finally {
        stopping = undefined;
        await started.stop();
      }
    } catch (error) {
      failures++;
      result.error = error instanceof Error ? error.message : String(error);
      progress(`  ${bench.id} FAILED: ${result.error}`);
    }
    result.seconds = (Date.now() - t0) / 1000;
  }

  for (const id of scales) {
    progress(
      `scale ${id}: storing ${settings.scaleSizes.map((n) => n.toLocaleString("en-US")).join(" / ")} keys`,
    );
    try {
      const r = await SCALES[id]!(settings);
      run.scales.push(r);
      progress(
        `scale ${id}: ${r.results.map((x, k) => `${r.sizes[k]} keys ${fmtRate(x.opsPerSec)}/s`).join(", ")}`,
      );
    } catch (error) {
      failures++;
      const message = `scale ${id}: ${error instanceof Error ? error.message : String(error)}`;
      run.scaleErrors.push(message);
      progress(`  FAILED: ${message}`);
    }
  }

  run.loadAtEnd = loadAverage();
  run.seconds = (Date.now() - started) / 1000;
  return run;
}

const runs: RunResult[] = [];
for (let pass = 0; pass < args.repeat; pass++) runs.push(await measure(pass));
// The report: the last pass's tables, with the whole run's span. A copy, so every pass in
// `repeats` keeps its own load, date and duration (the last pass's were once overwritten
// with the first's start load and the total time, so the repeat section printed pass 1's
// load twice and never the last pass's).
const last = runs.at(-1)!;
const run: RunResult = {
  ...last,
  charts: {},
  date: runs[0]!.date,
  loadAtStart: runs[0]!.loadAtStart,
  seconds: runs.reduce((sum, r) => sum + r.seconds, 0),
  ...(runs.length > 1 ? { repeats: runs } : {}),
};

if (out !== undefined) {
  const dir = dirname(out);
  mkdirSync(dir, { recursive: true });
  // A run of no backend (--only once, gateway, …) has no throughput to chart.
  if (run.backends.length > 0) {
    const throughputFile = sideFile("throughput.svg")!;
    mkdirSync(dirname(throughputFile), { recursive: true });
    writeFileSync(
      throughputFile,
      throughputChart(run.backends, settings.concurrency, provenanceText),
    );
    run.charts.throughput = relative(dir, throughputFile);
  }
  if (run.scales.length > 0) {
    const scaleFile = sideFile("scale.svg")!;
    writeFileSync(scaleFile, scaleChart(run.scales, provenanceText));
    run.charts.scale = relative(dir, scaleFile);
  }
  writeFileSync(out, renderMarkdown(run));
  progress(`wrote ${relative(process.cwd(), out)} and its charts`);
} else {
  // Still render, so a smoke run proves the report and the charts build.
  const text = renderMarkdown(run);
  throughputChart(run.backends, settings.concurrency, provenanceText);
  scaleChart(run.scales, provenanceText);
  const targets = text.split("\n## ")[1] ?? "";
  console.log(`${provenanceText}\n\n## ${targets.trim()}`);
  // The once() section too, as the transaction report is printed: nowhere else to read it.
  if (run.once) console.log(`\n${onceSection(run.once).join("\n")}`);
}
progress(
  `done in ${run.seconds.toFixed(0)} s, load ${run.loadAtEnd}${failures ? `; ${failures} part(s) FAILED` : ""}`,
);
process.exit(failures > 0 ? 1 : 0);
