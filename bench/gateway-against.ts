/**
 * `--only gateway --against <ref>`: the gateway section's figures for the working tree's
 * build and for `ref`'s, each in a process of its own (bench/gateway-side.ts: a cost that is
 * process-wide, such as the promise hooks the first AsyncLocalStorage store turns on in Node
 * 20 and 22, must not land on both), the two driven by this one, so they are compared on one
 * machine state. The same bench code (bench/gateway-calls.ts) drives both through the public
 * API. Each round
 * times every figure for both builds back to back, the order of the two swapped every round,
 * so a drift of load from elsewhere lands on both alike; bench/comparison.ts reads the ratios.
 */
import { fork } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import type { ComparisonRun, FigureRounds, RateSample } from "./comparison.js";
import type { SideReply, SideRequest } from "./gateway-side.js";
import type { Provenance } from "./provenance.js";
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

/** A build's side in its own process (bench/gateway-side.ts), asked one request at a time. */
interface RemoteSide {
  /** The commit it built; undefined for the working tree. */
  commit: string | undefined;
  node: string;
  sample(id: string, n: number): Promise<RateSample>;
  check(): Promise<void>;
  close(): void;
}

/**
 * Forks a process for `ref`'s build (undefined: the working tree's), with this process's Node
 * and flags (--expose-gc, tsx, the text loader), and resolves once it has built and is ready.
 */
function forkSide(ref: string | undefined): Promise<RemoteSide> {
  const child = fork(
    fileURLToPath(new URL("./gateway-side.ts", import.meta.url)),
    ref === undefined ? [] : [ref],
    { execArgv: process.execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] },
  );
  let waiting: { resolve: (reply: SideReply) => void; reject: (error: Error) => void } | undefined;
  const failed = (error: Error) => {
    const w = waiting;
    waiting = undefined;
    w?.reject(error);
  };
  child.on("message", (reply: SideReply) => {
    const w = waiting;
    waiting = undefined;
    if (reply.type === "error") w?.reject(new Error(reply.message));
    else w?.resolve(reply);
  });
  child.on("exit", (code, signal) =>
    failed(
      new Error(`bench: the side for ${ref ?? "the working tree"} exited (${signal ?? code})`),
    ),
  );
  child.on("error", failed);
  // An interrupted run ends its children too.
  const kill = () => child.kill();
  process.once("exit", kill);
  const next = () =>
    new Promise<SideReply>((resolve, reject) => {
      waiting = { resolve, reject };
    });
  const ask = (request: SideRequest) => {
    const reply = next();
    child.send(request);
    return reply;
  };
  return next().then((ready) => {
    if (ready.type !== "ready") throw new Error(`bench: a side answered ${ready.type} first`);
    return {
      commit: ready.commit,
      node: ready.node,
      async sample(id, n) {
        const reply = await ask({ type: "sample", id, n });
        if (reply.type !== "sample") throw new Error(`bench: a side answered ${reply.type}`);
        return reply.sample;
      },
      async check() {
        await ask({ type: "check" });
      },
      close() {
        child.removeAllListeners("exit");
        process.off("exit", kill);
        child.disconnect();
      },
    };
  });
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
  progress(`gateway against ${ref}: bundling ${ref} and the working tree, each in its own process`);
  // ref's first: a ref that names no commit fails before anything is bundled.
  const old = await forkSide(ref);
  const fresh = await forkSide(undefined).catch((error: unknown) => {
    old.close();
    throw error;
  });
  const sides = { old, new: fresh };
  try {
    return await timeSides(ref, sides, settings, about, started, loadAtStart);
  } finally {
    old.close();
    fresh.close();
  }
}

async function timeSides(
  ref: string,
  sides: { old: RemoteSide; new: RemoteSide },
  settings: Settings,
  about: { command: string; provenance: Provenance },
  started: number,
  loadAtStart: string,
): Promise<ComparisonRun> {
  progress(`gateway against ${ref}: commit ${sides.old.commit?.slice(0, 12)}; both sides ready`);
  const n = Math.round(settings.gatewayCycles / 20);
  const rounds = againstRounds(settings);
  // Each sample takes about this much CPU time: long enough for process.cpuUsage to time it.
  const sampleSeconds = settings.roundMs / 5 / 1000;
  const figures: FigureRounds[] = [];
  for (const f of FIGURES) {
    // Warm both builds up, old first; then size the samples from a second pass, on warm code.
    for (const who of ["old", "new"] as const) await sides[who].sample(f.id, f.warmUp(n));
    const warm = [
      await sides.old.sample(f.id, f.warmUp(n)),
      await sides.new.sample(f.id, f.warmUp(n)),
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
      for (const who of order) figure[who].push(await sides[who].sample(figure.id, figure.calls));
    }
    const at = (id: string) => {
      const f = figures.find((x) => x.id === id)!;
      return (f.new[round]!.perCpuSecond / f.old[round]!.perCpuSecond).toFixed(2);
    };
    progress(
      `  round ${round + 1}/${rounds} (${order[0]} first), new ÷ old per CPU-second: lock ${at("lock")}, push ${at("push")}, duplicate message ${at("duplicate.message")}, floor ${at("floor")}; load ${loadAverage()}`,
    );
  }
  await sides.old.check();
  await sides.new.check();
  return {
    command: about.command,
    provenance: about.provenance,
    ref,
    commit: sides.old.commit ?? ref,
    date: new Date(started).toISOString(),
    machine: `${os.cpus()[0]?.model.trim() ?? "?"}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}`,
    node: sides.new.node,
    loadAtStart,
    loadAtEnd: loadAverage(),
    seconds: (Date.now() - started) / 1000,
    rounds,
    sampleMs: sampleSeconds * 1000,
    figures,
  };
}
