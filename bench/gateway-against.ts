/**
 * `--only gateway --against <ref>`: the gateway section's figures for the working tree's
 * build and for `ref`'s, in one process, so the two are compared on one machine state. The
 * same bench code (bench/gateway-calls.ts) drives both through the public API. Each round
 * times every figure for both builds back to back, the order of the two swapped every round,
 * so a drift of load from elsewhere lands on both alike; bench/comparison.ts reads the ratios.
 */
import os from "node:os";
import type { ComparisonRun, FigureRounds, RateSample } from "./comparison.js";
import { type Call, InstantBackend, lockCalls, pushCalls, surfaceCalls } from "./gateway-calls.js";
import type { Provenance } from "./provenance.js";
import { buildAt, type PublishedBuild, publishedBuild } from "./published-build.js";
import { loadAverage, progress, type Settings } from "./runner.js";

/** A figure: what it times, and how many calls warm it up for a base count `n`. */
interface Figure {
  id: string;
  what: string;
  unit: string;
  warmUp: (n: number) => number;
  control?: true;
}

const share =
  (k: number, least = 100) =>
  (n: number) =>
    Math.max(least, Math.round(n * k));

/** Warm-ups of about the single-build section's size; each figure's samples are sized after them. */
const FIGURES: readonly Figure[] = [
  {
    id: "floor",
    what: "floor: claim + complete of the instant backend, called bare",
    unit: "cycles",
    warmUp: share(1),
    control: true,
  },
  { id: "lock", what: "lock(): claim → body → complete", unit: "cycles", warmUp: share(1) },
  {
    id: "withSignal",
    what: "lock(), the body takes its AbortSignal",
    unit: "cycles",
    warmUp: share(1),
  },
  { id: "push", what: "idempotentHttp push, no `auth`", unit: "pushes", warmUp: share(1 / 4) },
  {
    id: "pushWithAuth",
    what: "idempotentHttp push, `auth`, one token for every push",
    unit: "pushes",
    warmUp: share(1 / 4),
  },
  {
    id: "pushWithNewToken",
    what: "idempotentHttp push, `auth`, a new token each push (RS256 verified)",
    unit: "pushes",
    warmUp: (n) => Math.min(250, Math.max(10, Math.round(n / 400))),
  },
  {
    id: "duplicate.memory",
    what: "duplicate: InMemoryLock's claim of a done key, bare",
    unit: "claims",
    warmUp: share(1),
  },
  {
    id: "duplicate.http",
    what: "duplicate through idempotentHttp",
    unit: "deliveries",
    warmUp: share(1 / 4),
  },
  {
    id: "duplicate.message",
    what: "duplicate through idempotentMessage",
    unit: "deliveries",
    warmUp: share(1 / 2),
  },
  {
    id: "held.memory",
    what: "held: InMemoryLock's claim of a held key, bare",
    unit: "claims",
    warmUp: share(1),
  },
  {
    id: "held.http",
    what: "held through idempotentHttp",
    unit: "deliveries",
    warmUp: share(1 / 4),
  },
  {
    id: "held.message",
    what: "held through idempotentMessage",
    unit: "deliveries",
    warmUp: share(1 / 2),
  },
  {
    id: "disabledCheck",
    what: "gatewayDisabled(): the environment check each delivery makes",
    unit: "calls",
    warmUp: share(4),
  },
];

/**
 * Tokens each build signs for its new-token pushes: more than the 256 a verifier keeps, so a
 * token taken again in turn was dropped by then and is verified anew.
 */
const TOKEN_POOL = 600;

/** One build's calls by figure id (the environment check is a plain call), and its checks. */
interface Side {
  calls: Record<string, Call>;
  disabledCheck: () => boolean;
  /** Throws when a surface settled a message otherwise than its outcome asks. */
  check(): void;
}

async function sideOf(build: PublishedBuild): Promise<Side> {
  const backend = new InstantBackend();
  const lock = lockCalls(build, backend);
  const push = pushCalls(build, backend, TOKEN_POOL);
  const done = await surfaceCalls(build, "done");
  const held = await surfaceCalls(build, "held");
  return {
    calls: {
      floor: lock.floor,
      lock: lock.lock,
      withSignal: lock.withSignal,
      push: push.push,
      pushWithAuth: push.pushWithAuth,
      pushWithNewToken: push.pushWithNewToken,
      "duplicate.memory": done.calls.memory,
      "duplicate.http": done.calls.http,
      "duplicate.message": done.calls.message,
      "held.memory": held.calls.memory,
      "held.http": held.calls.http,
      "held.message": held.calls.message,
    },
    disabledCheck: build.core.gatewayDisabled,
    check() {
      done.check();
      held.check();
    },
  };
}

const collectGarbage = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

const rates = (n: number, cpu: NodeJS.CpuUsage, start: bigint): RateSample => {
  const wall = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  return { perWallSecond: n / wall, perCpuSecond: n / ((used.user + used.system) / 1e6) };
};

/**
 * One figure of one build: `n` calls one after another, after a full GC, so no garbage of
 * another sample is collected in this one, and a pause, so the GC's background sweeping
 * (which process.cpuUsage counts) is done before the clock starts.
 */
async function sample(side: Side, id: string, n: number): Promise<RateSample> {
  collectGarbage();
  await pause(10);
  if (id === "disabledCheck") {
    // A plain function: a loop without awaits, as gateway.ts times it.
    let disabled = 0;
    const cpu = process.cpuUsage();
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) if (side.disabledCheck()) disabled++;
    const result = rates(n, cpu, start);
    if (disabled > 0) {
      throw new Error("bench: GCP_PUBSUB_IDEMPOTENCY_DISABLED is set; unset it to bench");
    }
    return result;
  }
  const call = side.calls[id];
  if (call === undefined) throw new Error(`bench: no call for the figure ${id}`);
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await call();
  return rates(n, cpu, start);
}

/**
 * Rounds for a size: odd, so the median is one round's, and more than the section's own, since
 * a ratio near 1 is what is read. A smoke run's samples are too short to read: one round.
 */
export const againstRounds = (settings: Settings) =>
  settings.size === "smoke" ? 1 : 2 * settings.rounds + 1;

/**
 * Builds the working tree and `ref`, then times every figure for both: an untimed warm-up
 * that also sizes each figure's samples, then {@link againstRounds} rounds, old first in even
 * rounds (0-based).
 */
export async function gatewayAgainst(
  ref: string,
  settings: Settings,
  about: { command: string; provenance: Provenance },
): Promise<ComparisonRun> {
  const started = Date.now();
  const loadAtStart = loadAverage();
  progress(`gateway against ${ref}: bundling ${ref} and the working tree`);
  // ref's first: a ref that names no commit fails before anything is bundled.
  const old = await buildAt(ref);
  const fresh = await publishedBuild();
  progress(`gateway against ${ref}: commit ${old.commit.slice(0, 12)}; signing tokens`);
  const sides = { old: await sideOf(old), new: await sideOf(fresh) };
  const n = Math.round(settings.gatewayCycles / 20);
  const rounds = againstRounds(settings);
  // Each sample takes about this much CPU time: long enough for process.cpuUsage to time it.
  const sampleSeconds = settings.roundMs / 5 / 1000;
  const figures: FigureRounds[] = [];
  for (const f of FIGURES) {
    // Warm both builds up, old first; then size the samples from a second pass, on warm code.
    for (const who of ["old", "new"] as const) await sample(sides[who], f.id, f.warmUp(n));
    const warm = [
      await sample(sides.old, f.id, f.warmUp(n)),
      await sample(sides.new, f.id, f.warmUp(n)),
    ];
    const perCpuSecond = (warm[0]!.perCpuSecond + warm[1]!.perCpuSecond) / 2;
    figures.push({
      id: f.id,
      what: f.what,
      unit: f.unit,
      calls: Math.max(10, Math.round(sampleSeconds * perCpuSecond)),
      ...(f.control ? { control: true } : {}),
      old: [],
      new: [],
    });
  }
  progress(`  warm-up done; load ${loadAverage()}`);
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (["old", "new"] as const) : (["new", "old"] as const);
    for (const figure of figures) {
      for (const who of order) figure[who].push(await sample(sides[who], figure.id, figure.calls));
    }
    const at = (id: string) => {
      const f = figures.find((x) => x.id === id)!;
      return (f.new[round]!.perCpuSecond / f.old[round]!.perCpuSecond).toFixed(2);
    };
    progress(
      `  round ${round + 1}/${rounds} (${order[0]} first), new ÷ old per CPU-second: lock ${at("lock")}, push ${at("push")}, duplicate message ${at("duplicate.message")}, floor ${at("floor")}; load ${loadAverage()}`,
    );
  }
  sides.old.check();
  sides.new.check();
  return {
    command: about.command,
    provenance: about.provenance,
    ref,
    commit: old.commit,
    date: new Date(started).toISOString(),
    machine: `${os.cpus()[0]?.model.trim() ?? "?"}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}`,
    node: process.version,
    loadAtStart,
    loadAtEnd: loadAverage(),
    seconds: (Date.now() - started) / 1000,
    rounds,
    sampleMs: sampleSeconds * 1000,
    figures,
  };
}
