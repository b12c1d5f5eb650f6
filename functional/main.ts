/**
 * The functional suite: real Pub/Sub push into a fleet of worker processes on DatastoreLock,
 * on the official emulators. `npm run functional -- --help` says what it does.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { PubSub } from "@google-cloud/pubsub";
import { SqlLock } from "gcp-pubsub-idempotency/sql";
import { type Emulator, PROJECT, startEmulator } from "../test/support/gcloud-emulator.js";
import { startPostgres } from "../test/support/sql.js";
import { startSupplier } from "../test/support/supplier.js";
import { FLEET, Fleet } from "./fleet.js";
import { ledger } from "./ledger.js";
import { DeliveryProgress } from "./progress.js";
import { startProxy } from "./proxy.js";
import { STEP_SINKS, scenarioOfKey, type WorkerEvent } from "./records.js";
import {
  type Context,
  crashStorm,
  type Figures,
  type PublishedMessage,
  QUIET_SCENARIOS,
  type Scenario,
  type SinkDatabase,
  type SinkTally,
  transactionSink,
} from "./scenarios.js";
import { STEPS, stepScenarioName, stepStorm } from "./step-storm.js";

const HELP = `npm run functional -- [options]

Starts the Pub/Sub emulator and the Firestore emulator in Datastore mode (or uses
PUBSUB_EMULATOR_HOST / DATASTORE_EMULATOR_HOST), a supplier that de-duplicates on the
Idempotency-Key header, ${FLEET.length} worker processes (${FLEET.join(", ")}) on
DatastoreLock behind a round-robin proxy, and push subscriptions into it. Runs the quiet
scenarios side by side, then the crash storm beside the transactional sink (SqlLock with
transaction: true, plain INSERTs into a table of a fresh database on the PostgreSQL at
DATABASE_URL, default 127.0.0.1:5432), then the step storm: a three-step handler
(charge → ship → email, each step() into its own table that does not de-duplicate) on
SqlLock (that database) and on DatastoreLock, workers killing themselves before, inside,
between and after the steps. Prints a table and writes functional/results/latest.json.
Exit code 1 when any invariant is violated.

Loopback only: the suite and its workers run under test/harness/network-guard.mjs, which
refuses any connection or name lookup beyond 127.0.0.0/8, ::1 and localhost; a refusal
in any of them fails the run.

Options:
  --orders N        crash-storm orders, each published twice (default 1000); the
                    transactional sink gets a tenth as many (at least 20)
  --lease-ms N      the workers' lease (default 5000: crashed holders are reclaimed in the run;
                    shorter leases lapse on this loaded emulator before complete lands)
  --crash-chance P  chance a storm body kills its worker between the supplier call and
                    complete (default 0.02)
  --kill-every MS   mean interval of the harness's random SIGKILLs in the storm (default 3000)
  --seed N          seed of the storm's order, holds and kills (default 1)
  --lock NAME       the supplier scenarios' lock: datastore (default), or none, the control
                    run: a lock that excludes nothing, on which the checks must fail
  --step-orders N   step-storm messages per store (default 1000; 0: no step storm)
  --step-crashes N  step-storm messages per store whose first delivery to reach their crash
                    point kills its worker there (default 14: 2 per point, round robin over
                    before, in:charge, charge|ship, in:ship, ship|email, in:email, after)
  --steps MODE      the step storm's handler: step (default), or lock, the control run: the
                    same three steps under the surface's lock alone (no step()), on which
                    the step checks must fail
  --only steps      run the step storm alone (no quiet scenarios, crash storm or
                    transactional sink); the harness's random SIGKILLs still run
  --record          also write functional/results/reference.json (the README's figures)
  --help            this text`;

const { values } = parseArgs({
  options: {
    orders: { type: "string", default: "1000" },
    "lease-ms": { type: "string", default: "5000" },
    "crash-chance": { type: "string", default: "0.02" },
    "kill-every": { type: "string", default: "3000" },
    seed: { type: "string", default: "1" },
    lock: { type: "string", default: "datastore" },
    "step-orders": { type: "string", default: "1000" },
    "step-crashes": { type: "string", default: "14" },
    steps: { type: "string", default: "step" },
    only: { type: "string" },
    record: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const orders = Number(values.orders);
const leaseMs = Number(values["lease-ms"]);
const crashChance = Number(values["crash-chance"]);
const killEveryMs = Number(values["kill-every"]);
let seed = Number(values.seed);
const stepOrders = Number(values["step-orders"]);
const stepCrashes = Math.min(Number(values["step-crashes"]), stepOrders);
if (!Number.isSafeInteger(stepOrders) || stepOrders < 0) {
  console.error("--step-orders must be a non-negative integer");
  process.exit(2);
}
for (const [name, value] of Object.entries({ orders, leaseMs, killEveryMs, seed })) {
  if (!Number.isSafeInteger(value) || value < 1) {
    console.error(`--${name} must be a positive integer`);
    process.exit(2);
  }
}
if (!Number.isSafeInteger(stepCrashes) || stepCrashes < 0 || stepCrashes > stepOrders) {
  console.error("--step-crashes must be an integer from 0 to --step-orders");
  process.exit(2);
}
const stepsMode = values.steps;
if (stepsMode !== "step" && stepsMode !== "lock") {
  console.error("--steps must be step or lock");
  process.exit(2);
}
const onlySteps = values.only === "steps";
if (values.only !== undefined && !onlySteps) {
  console.error("--only takes steps");
  process.exit(2);
}
const lock = values.lock;
if (lock !== "datastore" && lock !== "none") {
  console.error("--lock must be datastore or none");
  process.exit(2);
}
if (!(crashChance >= 0 && crashChance <= 1)) {
  console.error("--crash-chance must be between 0 and 1");
  process.exit(2);
}

/** A small deterministic PRNG, so a seed reproduces the storm's order, holds and kills. */
function random(): number {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}

/** Longer than any redelivery gap (3 s), lease (5 s) and the slow message (12 s) together. */
const STALL_MS = 45_000;

/**
 * Silence after a nack that means the emulator stranded the message: its redeliveries here
 * come 1-3 s apart (the retry policy is 1-2 s) and a push is answered within the 10 s ack
 * deadline, so 10 s without a new push is not a slow redelivery.
 */
const REPUSH_AFTER_MS = 10_000;

/**
 * The Datastore emulator keeps the lock of a transaction whose process died (SIGKILLed between
 * its lookup and its commit) until the transaction idles out: measured 60.7-60.8 s, whether
 * the dead process's channel closed or not, or the holder lived on (functional/probes/
 * emulator-lock-hold.ts, 4 December 2026). Every claim of that
 * key meanwhile fails with "ABORTED: Transaction lock timeout" and is nacked. When every
 * message still unacked at the stall cutoff is such a key, the run waits this much longer,
 * once (the lock's 61 s, a lease, a re-push), and counts those messages apart.
 */
const EMULATOR_LOCK_WAIT_MS = 90_000;
const LOCK_TIMEOUT = /transaction lock timeout/i;

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
const say = (text: string) => console.log(`[functional ${elapsed()}] ${text}`);

// google-auth-library otherwise probes for a GCE metadata server and warns that none is here.
process.env.METADATA_SERVER_DETECTION ??= "none";
const run = `r${Date.now().toString(36)}`;
const root = fileURLToPath(new URL("..", import.meta.url));
const runDir = join(root, ".tmp", "functional", run);
const resultsDir = join(root, "functional", "results");
mkdirSync(runDir, { recursive: true });
mkdirSync(resultsDir, { recursive: true });

/** The commit this run's code is, and whether the work tree differed from it. */
function commitOf(): { sha: string; dirty: boolean } {
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
  try {
    return { sha: git("rev-parse", "HEAD"), dirty: git("status", "--porcelain").length > 0 };
  } catch {
    return { sha: "unknown", dirty: true };
  }
}

/** The run as markdown: what ran, from which commit, the table, and the storm's counts. */
function report(
  result: {
    ok: boolean;
    finishedAt: string;
    seconds: number;
    commit: { sha: string; dirty: boolean };
    options: Record<string, unknown>;
    scenarios: readonly (Figures & { claim?: string | undefined })[];
  },
  table: readonly string[],
): string {
  const { sha, dirty } = result.commit;
  const storm = result.scenarios.find((f) => f.scenario === "crash-storm");
  const n = (x: unknown) => (typeof x === "number" ? x.toLocaleString("en-US") : String(x));
  const lines = [
    "# Functional suite: the last recorded run",
    "",
    `Written by \`npm run functional -- --record\` (do not edit by hand) from commit \`${sha}\`${dirty ? " **with uncommitted changes: not reproducible from that commit**" : ""}, finished ${result.finishedAt}, ${result.seconds} s in all. Options: ${Object.entries(
      result.options,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}. ${result.ok ? "Every invariant held." : "**Some invariants were violated.**"}`,
    "",
    ...table,
    "",
  ];
  if (storm) {
    const notes = storm.notes;
    lines.push(
      `In the storm ${n(storm.supplierOrders)} orders (${n(storm.messages)} messages) ran their body ${n(storm.bodyRuns)} times and reached the supplier ${n(storm.supplierArrivals)} times. ${n(notes.sendsAbandonedByACrash)} sends ended with their worker dead before its complete (${n(notes.selfCrashesInWindow)} bodies killed their own worker right after the send; the harness SIGKILLed ${n(notes.harnessKills)} workers at random), and ${n(storm.resentAfterCrash)} of those orders were sent again by the worker that reclaimed the key after the lease lapsed (${n(storm.reclaims)} reclaims after a lapse, ${n(storm.reclaimsAfterRelease)} after a release). ${result.ok ? "Every send beyond an order's first followed such a crash; the" : "Not every send beyond an order's first followed such a crash (see the violations); the"} supplier's Idempotency-Key absorbed them: ${n(storm.supplierExactlyOnce)} of ${n(storm.supplierOrders)} orders accepted exactly once.${storm.emulatorLockWaits > 0 ? ` ${n(storm.emulatorLockWaits)} messages were waited for past the stall cutoff: a dead worker's transaction held their key on the emulator.` : ""}`,
      "",
    );
  }
  for (const f of result.scenarios)
    if (typeof f.notes.summary === "string") lines.push(f.notes.summary, "");
  for (const f of result.scenarios) if (f.claim) lines.push(`- **${f.scenario}**: ${f.claim}`);
  return `${lines.join("\n")}\n`;
}

/** Every worker's events so far, each file in the order its workers wrote it. */
function readEvents(): WorkerEvent[] {
  return readdirSync(runDir)
    .filter((f) => f.endsWith(".jsonl"))
    .flatMap((f) =>
      readFileSync(join(runDir, f), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as WorkerEvent),
    );
}

function readWorkerLog(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return ""; // no fleet was started
  }
}

const emulators: Emulator[] = [];
const stops: (() => Promise<void>)[] = [];
async function shutdown(): Promise<void> {
  for (const stop of stops.reverse()) await stop().catch(() => {});
  await Promise.all(emulators.map((e) => e.stop()));
}
// Interrupted or terminated, the emulators (their own process groups) must still go.
process.once("SIGINT", () => void shutdown().then(() => process.exit(130)));
process.once("SIGTERM", () => void shutdown().then(() => process.exit(143)));

try {
  const [pubsubEmulator, datastoreEmulator] = await Promise.all([
    startEmulator("pubsub"),
    startEmulator("datastore"),
  ]);
  emulators.push(pubsubEmulator, datastoreEmulator);
  for (const e of [pubsubEmulator, datastoreEmulator])
    say(`emulator at ${e.host}${e.owned ? `, started in ${e.startupMs} ms` : " (existing)"}`);

  const postgres = await startPostgres();
  stops.push(() => postgres.drop());
  const sinkPool = postgres.pool(2);
  // The workers' record table and the business table: no unique constraint on orders.
  await new SqlLock({ client: sinkPool, table: "idempotency_records" }).ensureSchema();
  await sinkPool.query(
    "CREATE TABLE orders (order_id text NOT NULL, message_id text NOT NULL, worker text NOT NULL)",
  );
  // The step storm: its SqlLock records, and one table per step, no unique constraint.
  await new SqlLock({ client: sinkPool, table: "step_records" }).ensureSchema();
  for (const table of Object.values(STEP_SINKS))
    await sinkPool.query(
      `CREATE TABLE ${table} (key text NOT NULL, run text NOT NULL, seen text NOT NULL, made text NOT NULL, worker text NOT NULL, pid integer NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    );
  const database: SinkDatabase = {
    async tally(): Promise<SinkTally> {
      const rows = await sinkPool.query<{ order_id: string; n: string }>(
        "SELECT order_id, count(*) AS n FROM orders GROUP BY order_id",
      );
      const done = await sinkPool.query<{ n: string }>(
        "SELECT count(*) AS n FROM idempotency_records WHERE state = 'done'",
      );
      return {
        counts: new Map(rows.rows.map((row) => [row.order_id, Number(row.n)])),
        doneRecords: Number(done.rows[0]?.n ?? 0),
      };
    },
    async stepArrivals(scenario) {
      const rows = await Promise.all(
        STEPS.map(async (step) => {
          const result = await sinkPool.query<{
            key: string;
            run: string;
            seen: string;
            made: string;
          }>(`SELECT key, run, seen, made FROM ${STEP_SINKS[step]} WHERE key LIKE $1 ORDER BY at`, [
            `${scenario}/%`,
          ]);
          return result.rows.map((row) => ({ ...row, step }));
        }),
      );
      return rows.flat();
    },
    async stepDoneRecords() {
      const done = await sinkPool.query<{ n: string }>(
        "SELECT count(*) AS n FROM step_records WHERE state = 'done'",
      );
      return Number(done.rows[0]?.n ?? 0);
    },
  };
  say(`PostgreSQL database ${postgres.database} for the transactional sink`);

  const stepCrashDir = join(runDir, "step-crashes");
  mkdirSync(stepCrashDir);
  const supplier = await startSupplier();
  stops.push(() => supplier.close());
  const fleet = await Fleet.start({
    runDir,
    supplierUrl: supplier.url,
    namespace: `functional-${run}`,
    leaseMs,
    crashChance,
    lock,
    env: {
      DATASTORE_EMULATOR_HOST: datastoreEmulator.host,
      GCLOUD_PROJECT: PROJECT,
      METADATA_SERVER_DETECTION: "none",
      FUNCTIONAL_DATABASE_URL: postgres.url,
      FUNCTIONAL_STEPS: stepsMode,
      FUNCTIONAL_STEP_CRASH_DIR: stepCrashDir,
    },
  });
  stops.push(() => fleet.stop());
  const proxy = await startProxy(fleet.ports, (i) => fleet.isUp(i), {
    repushAfterMs: REPUSH_AFTER_MS,
    // The dead-letter scenario counts the emulator's own attempts: never re-sent.
    repushScenarios: new Set([
      ...QUIET_SCENARIOS.map((s) => s.name).filter((name) => name !== "poison"),
      "crash-storm",
      "transaction-sink",
      stepScenarioName("sql"),
      stepScenarioName("datastore"),
    ]),
  });
  stops.push(() => proxy.close());
  say(`fleet up: ${fleet.slots.map((s) => `${s.name}:${s.port}`).join(", ")}; proxy ${proxy.url}`);

  const pubsub = new PubSub({
    projectId: PROJECT,
    apiEndpoint: pubsubEmulator.host,
    emulatorMode: true,
  });
  stops.push(() => pubsub.close());
  const ctx: Context = {
    pubsub,
    proxy,
    supplier,
    run,
    deadLettered: new Map(),
    random,
    closers: [],
    database,
  };

  interface Running {
    readonly scenario: Scenario;
    readonly published: readonly PublishedMessage[];
    readonly subscriptions: readonly string[];
    readonly startedAt: number;
    settledAt?: number;
    /** Messages the run waited for beyond the stall cutoff: keys an emulator lock held. */
    lockWaited?: string[];
  }

  const progress = new DeliveryProgress(proxy.deliveries);
  /** Acked on every subscription it was published to. */
  const ackedEverywhere = (m: PublishedMessage) =>
    m.subscriptions.every((s) => progress.isAcked(s, m.messageId));
  const settled = (r: Running): boolean => {
    progress.read();
    return r.published.every((m) =>
      m.poison ? ctx.deadLettered.has(m.orderId) : ackedEverywhere(m),
    );
  };

  async function runAll(scenarios: readonly Scenario[], timeoutMs: number, during?: () => void) {
    const running: Running[] = await Promise.all(
      scenarios.map(async (scenario) => {
        const startedAt = Date.now();
        return { scenario, startedAt, ...(await scenario.publish(ctx)) };
      }),
    );
    say(`published ${running.map((r) => `${r.scenario.name}: ${r.published.length}`).join(", ")}`);
    const deadline = Date.now() + timeoutMs;
    let nextProgress = Date.now() + 10_000;
    // The emulator sometimes never pushes a nacked message again (see the README): give up
    // once the phase has made no progress for STALL_MS (functional/progress.ts: no ack, and
    // no push a killed worker cut), and report the rest as unacked.
    const since = Date.now();
    const ids = running.flatMap((r) =>
      r.published.flatMap((m) => m.subscriptions.map((s) => `${s}/${m.messageId}`)),
    );
    let stallMs = STALL_MS;
    while (running.some((r) => r.settledAt === undefined) && Date.now() < deadline) {
      if (progress.silentFor(Date.now(), since, ids) > stallMs) {
        const waiting = stallMs === STALL_MS ? lockedByTheEmulator(running) : undefined;
        if (!waiting) {
          say(
            `no progress for ${stallMs / 1000} s (no ack, no push a killed worker cut): giving up on the rest`,
          );
          break;
        }
        stallMs += EMULATOR_LOCK_WAIT_MS;
        say(
          `no progress for ${STALL_MS / 1000} s; every unacked message meets the emulator's "Transaction lock timeout" (a dead worker's transaction): waiting up to ${EMULATOR_LOCK_WAIT_MS / 1000} s more for ${waiting} of them`,
        );
      }
      if (Date.now() > nextProgress) {
        nextProgress += 10_000;
        say(
          `acked ${progress.acked.size} pushes so far; ${fleet.kills} kills, ${fleet.restarts} restarts`,
        );
      }
      for (const r of running)
        if (r.settledAt === undefined && settled(r)) r.settledAt = Date.now();
      during?.();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    progress.read();
    return running;
  }

  /**
   * At the stall cutoff: when every unacked message's key has met the emulator's lock
   * timeout, mark them on their scenario and say how many; otherwise undefined.
   */
  function lockedByTheEmulator(running: readonly Running[]): number | undefined {
    const lockTimeouts = readEvents().filter(
      (e) => e.kind === "store_error" && LOCK_TIMEOUT.test(e.error ?? ""),
    );
    // The gateway's failure line names the messageId, the key, or both.
    const locked = new Set(lockTimeouts.flatMap((e) => [e.messageId, e.key]));
    const isLocked = (name: string, m: PublishedMessage) =>
      locked.has(m.messageId) ||
      locked.has(`${name}/order:${m.orderId}`) ||
      locked.has(`${name}/msg:${m.messageId}`);
    const unacked = running.map((r) => ({
      r,
      messages: r.published.filter((m) => !m.poison && !ackedEverywhere(m)),
    }));
    const all = unacked.flatMap((u) => u.messages.map((m) => ({ name: u.r.scenario.name, m })));
    if (all.length === 0 || !all.every(({ name, m }) => isLocked(name, m))) return undefined;
    for (const u of unacked)
      if (u.messages.length > 0) u.r.lockWaited = u.messages.map((m) => m.orderId);
    return all.length;
  }

  let quiet: Running[] = [];
  if (!onlySteps) {
    say("quiet scenarios, side by side");
    quiet = await runAll(QUIET_SCENARIOS, 120_000);
    // An acked message must not come back: wait out one emulator redelivery interval (~1 s).
    await new Promise((resolve) => setTimeout(resolve, 2_500));
  }

  /** Run `scenarios` to the end while the harness SIGKILLs a random worker now and then. */
  const underKills = (scenarios: readonly Scenario[], timeoutMs: number) => {
    let nextKill = Date.now() + killEveryMs;
    return runAll(scenarios, timeoutMs, () => {
      if (Date.now() < nextKill) return;
      nextKill = Date.now() + killEveryMs * (0.5 + random());
      // Keep at least two instances serving, so the storm still makes progress.
      if (fleet.slots.filter((s) => s.up).length > 2) fleet.killRandom(random);
    });
  };

  const sinkOrders = Math.max(20, Math.round(orders / 10));
  const crashScenarios = onlySteps
    ? []
    : [crashStorm({ orders, crashChance }), transactionSink({ orders: sinkOrders })];
  let crashed: Running[] = [];
  if (!onlySteps) {
    say(
      `crash storm: ${orders} orders, beside the transactional sink: ${sinkOrders} orders, each published twice; SIGKILL about every ${killEveryMs} ms`,
    );
    crashed = await underKills(crashScenarios, 240_000 + orders * 100);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
  }
  const stormKills = fleet.kills;

  // The step storm after it, on a fleet of its own time: beside the crash storm, the two
  // starve each other of the emulators' push windows and of the workers' restarts.
  const stepScenarios =
    stepOrders === 0
      ? []
      : (["sql", "datastore"] as const).map((store) =>
          stepStorm({
            store,
            orders: stepOrders,
            crashes: stepCrashes,
            control: stepsMode === "lock",
          }),
        );
  let stepped: Running[] = [];
  if (stepOrders > 0) {
    say(
      `step storm${stepsMode === "lock" ? " (the control: lock() alone)" : ""}: ${stepOrders} messages on each of SqlLock and DatastoreLock, ${stepCrashes} of each crashing at a step point; SIGKILL about every ${killEveryMs} ms`,
    );
    stepped = await underKills(stepScenarios, 240_000 + 2 * stepOrders * 150);
  }
  const stepKills = fleet.kills - stormKills;
  const stormScenarios = [...crashScenarios, ...stepScenarios];
  const storm = [...crashed, ...stepped];
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  for (const close of ctx.closers) await close();
  // No worker writes after this: the sinks and the workers' files are read as they ended (a
  // run that gave up on some messages would otherwise race the workers still on them).
  await fleet.stop();

  for (const r of storm) await r.scenario.readSink?.(ctx);
  const events = readEvents();
  // Every push and its answer, beside the workers' files, for a look at a slow or stalled run.
  writeFileSync(
    join(runDir, "deliveries.jsonl"),
    proxy.deliveries.map((d) => `${JSON.stringify(d)}\n`).join(""),
  );
  const deadPids = new Set(fleet.deadPids);
  const scenarioOfMessage = new Map<string, string>();
  for (const r of [...quiet, ...storm])
    for (const m of r.published) scenarioOfMessage.set(m.messageId, r.scenario.name);
  const eventsOf = (name: string) =>
    events.filter(
      (e) => scenarioOfKey(e.key) === name || scenarioOfMessage.get(e.messageId ?? "") === name,
    );
  const sinks = new Map<string, SinkTally>();
  for (const r of [...quiet, ...storm])
    if (r.scenario.sink)
      sinks.set(
        r.scenario.name,
        await r.scenario.sink(ctx, {
          published: r.published,
          events: eventsOf(r.scenario.name),
          deadPids,
        }),
      );
  const unattributed = events.filter(
    (e) => !scenarioOfKey(e.key) && !scenarioOfMessage.has(e.messageId ?? ""),
  );

  const figures: Figures[] = [...quiet, ...storm].map((r) => {
    const name = r.scenario.name;
    const mine = eventsOf(name);
    const count = (kind: WorkerEvent["kind"]) => mine.filter((e) => e.kind === kind).length;
    const deliveries = proxy.deliveries.filter((d) => d.scenario === name);
    const supplierIds = [
      ...new Set(r.published.filter((m) => !m.poison).map((m) => `${name}/${m.orderId}`)),
    ];
    // The scenario's own sink counts by order id; the supplier's ids are `<scenario>/<order>`.
    const sink = sinks.get(name);
    const accepted = (id: string) =>
      sink ? (sink.counts.get(id.slice(name.length + 1)) ?? 0) : (supplier.accepted.get(id) ?? 0);
    const resends = sink
      ? 0
      : supplierIds.reduce((n, id) => n + (supplier.deduplicated.get(id) ?? 0), 0);
    // What the workers' records say of every run and send, whatever the supplier absorbed.
    const books = ledger({
      events: mine,
      arrivals: new Map(sink ? [] : supplierIds.map((id) => [id, supplier.arrivals.get(id) ?? 0])),
      deadPids,
      fencedRunsRollBack: sink !== undefined,
    });
    const unacked = r.published.filter((m) =>
      m.poison ? !ctx.deadLettered.has(m.orderId) : !ackedEverywhere(m),
    ).length;
    const f: Figures = {
      scenario: name,
      messages: r.published.length,
      subscriptions: r.subscriptions.length,
      pushes: deliveries.filter((d) => d.answered && !d.repushed).length,
      repushes: deliveries.filter((d) => d.answered && d.repushed).length,
      deliveries: deliveries.length,
      bodyRuns: count("body"),
      duplicatesSkipped: count("duplicate"),
      contentionNacks: count("contention"),
      bodyFailures: count("failed"),
      crashes: count("crash") + (name === "crash-storm" ? stormKills : 0),
      reclaims: books.reclaimsAfterLapse,
      reclaimsAfterRelease: books.reclaimsAfterRelease,
      fencedOut: count("fenced_out"),
      supplierOrders: supplierIds.length,
      supplierExactlyOnce: supplierIds.filter((id) => accepted(id) === 1).length,
      supplierMissing: supplierIds.filter((id) => accepted(id) === 0).length,
      supplierExtra: supplierIds.filter((id) => accepted(id) > 1).length,
      supplierResendsDeduplicated: resends,
      supplierArrivals: books.arrivals,
      resentAfterCrash: books.ordersResentAfterCrash,
      emulatorLockWaits: r.lockWaited?.length ?? 0,
      unacked,
      seconds: Math.round(((r.settledAt ?? Date.now()) - r.startedAt) / 100) / 10,
      notes: {
        ...(count("store_error") > 0 ? { storeErrorsNacked: count("store_error") } : {}),
        ...(r.lockWaited ? { waitedOutEmulatorLock: r.lockWaited } : {}),
      },
      violations: [...books.violations.slice(0, 10)],
    };
    if (books.violations.length > 10)
      f.violations.push(`… and ${books.violations.length - 10} more like these`);
    const stranded = r.published.filter((m) => !m.poison && !ackedEverywhere(m));
    if (stranded.length > 0)
      f.notes.unackedMessages = stranded.slice(0, 20).map((m) => ({
        messageId: m.messageId,
        orderId: m.orderId,
        pushes: deliveries
          .filter((d) => d.messageId === m.messageId && d.answered)
          .map((d) => `${d.status}@${Math.round((d.startedAt - r.startedAt) / 100) / 10}s`),
      }));
    if (name === "crash-storm") {
      f.notes.selfCrashesInWindow = count("crash");
      f.notes.harnessKills = stormKills;
      f.notes.restarts = fleet.restarts;
      f.notes.bodyRunsAbovePerOrder = f.bodyRuns - f.supplierOrders;
      f.notes.sendsAbandonedByACrash = books.sendsAbandoned;
      f.notes.runsAbandonedByACrash = books.runsAbandoned;
      f.notes.leaseMs = leaseMs;
    }
    if (sink?.doneRecords !== undefined) {
      f.notes.sinkRows = [...sink.counts.values()].reduce((n, c) => n + c, 0);
      f.notes.doneRecords = sink.doneRecords;
      f.notes.selfCrashesBetweenInsertAndCommit = count("crash");
      if (sink.doneRecords !== f.supplierOrders)
        f.violations.push(`${sink.doneRecords} DONE records, expected ${f.supplierOrders}`);
    }
    if (sink?.notes) Object.assign(f.notes, sink.notes);
    if (stepScenarios.some((scenario) => scenario.name === name)) f.notes.harnessKills = stepKills;
    // A lapse is the heartbeat telling a body its lease ran out unconfirmed: counted, and the
    // body's own outcome (completed, failed, fenced out) is judged as any other.
    const lapses = count("lease_lapsed");
    if (lapses > 0) f.notes.leaseLapses = lapses;
    if (sink?.violations) {
      f.violations.push(...sink.violations.slice(0, 10));
      if (sink.violations.length > 10)
        f.violations.push(`… and ${sink.violations.length - 10} more from the sink's books`);
    }
    // The invariants every scenario shares.
    if (f.supplierExactlyOnce !== f.supplierOrders)
      f.violations.push(
        `supplier: ${f.supplierExactlyOnce}/${f.supplierOrders} exactly once, ${f.supplierMissing} missing, ${f.supplierExtra} more than once`,
      );
    if (f.unacked > 0) f.violations.push(`${f.unacked} messages never acked (or dead-lettered)`);
    if (name !== "transient" && name !== "poison" && f.bodyFailures > 0)
      f.violations.push(
        `${f.bodyFailures} body failures: ${mine.find((e) => e.kind === "failed")?.error}`,
      );
    if (name === "poison" && f.bodyFailures !== 5)
      f.violations.push(`poison: ${f.bodyFailures} body failures, expected 5`);
    r.scenario.check(
      f,
      { published: r.published, subscriptions: r.subscriptions, deliveries, events: mine },
      ctx,
    );
    return f;
  });

  const columns: [string, (f: Figures) => string | number][] = [
    ["scenario", (f) => f.scenario],
    ["msgs", (f) => f.messages],
    ["pushes", (f) => f.pushes],
    ["re-pushed", (f) => f.repushes],
    ["deliv", (f) => f.deliveries],
    ["body runs", (f) => f.bodyRuns],
    ["dup skipped", (f) => f.duplicatesSkipped],
    ["contention", (f) => f.contentionNacks],
    ["failures", (f) => f.bodyFailures],
    ["crashes", (f) => f.crashes],
    ["reclaims lapse/rel", (f) => `${f.reclaims}/${f.reclaimsAfterRelease}`],
    ["arrivals", (f) => (f.supplierArrivals > 0 ? f.supplierArrivals : "-")],
    ["resent after crash", (f) => f.resentAfterCrash],
    [
      "sink once/missing/extra",
      (f) => `${f.supplierExactlyOnce}/${f.supplierMissing}/${f.supplierExtra}`,
    ],
    ["unacked", (f) => f.unacked],
    ["s", (f) => f.seconds.toFixed(1)],
    ["ok", (f) => (f.violations.length === 0 ? "yes" : "NO")],
  ];
  const cells = figures.map((f) => columns.map(([, get]) => String(get(f))));
  const widths = columns.map(([head], i) =>
    Math.max(head.length, ...cells.map((row) => (row[i] ?? "").length)),
  );
  const line = (row: string[]) =>
    `| ${row.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join(" | ")} |`;
  const table = [
    line(columns.map(([head]) => head)),
    `|${widths.map((w, i) => (i === 0 ? `:${"-".repeat(w + 1)}` : `${"-".repeat(w + 1)}:`)).join("|")}|`,
    ...cells.map(line),
  ];
  console.log(["", ...table, ""].join("\n"));
  for (const f of figures) {
    for (const v of f.violations) console.log(`VIOLATION ${f.scenario}: ${v}`);
    if (Object.keys(f.notes).length > 0) console.log(`  ${f.scenario}: ${JSON.stringify(f.notes)}`);
  }
  if (unattributed.length > 0)
    console.log(
      `VIOLATION: ${unattributed.length} worker events outside any scenario, e.g. ${JSON.stringify(unattributed[0])}`,
    );

  const ok = figures.every((f) => f.violations.length === 0) && unattributed.length === 0;
  const result = {
    ok,
    run,
    finishedAt: new Date().toISOString(),
    seconds: Math.round((Date.now() - started) / 1000),
    commit: commitOf(),
    options: {
      orders,
      leaseMs,
      crashChance,
      killEveryMs,
      seed: Number(values.seed),
      lock,
      stepOrders,
      stepCrashes,
      steps: stepsMode,
      ...(onlySteps ? { only: "steps" } : {}),
    },
    fleet: fleet.slots.map((s) => ({ name: s.name, starts: s.starts })),
    emulators: { pubsub: pubsubEmulator.host, datastore: datastoreEmulator.host },
    scenarios: figures.map((f) => ({
      ...f,
      claim: [...QUIET_SCENARIOS, ...stormScenarios].find((s) => s.name === f.scenario)?.claim,
    })),
  };
  const json = `${JSON.stringify(result, null, 2)}\n`;
  const markdown = report(result, table);
  writeFileSync(join(resultsDir, "latest.json"), json);
  writeFileSync(join(resultsDir, "latest.md"), markdown);
  if (values.record) {
    writeFileSync(join(resultsDir, "reference.json"), json);
    writeFileSync(join(resultsDir, "reference.md"), markdown);
  }
  say(ok ? "OK: every invariant held" : "FAILED: see the violations above");
  process.exitCode = ok ? 0 : 1;
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await shutdown();
  // The workers inherit the network guard, which prints each refusal to their stderr.
  const refused = readWorkerLog(join(runDir, "workers.log"))
    .split("\n")
    .filter((line) => line.includes("network guard: refused"));
  if (refused.length > 0) {
    console.log(`VIOLATION: workers tried to reach beyond loopback:\n${refused.join("\n")}`);
    process.exitCode = 1;
  }
  say(`done; worker logs in ${runDir}`);
  // Client libraries can keep timers alive after close(); the verdict is already set.
  process.exit();
}
