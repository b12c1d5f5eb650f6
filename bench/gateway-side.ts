/**
 * One build's side of `--against`, in a process of its own: bench/gateway-against.ts forks one
 * for the working tree and one for the ref, and asks each in turn to time a figure. Each build
 * has its own process because some costs are process-wide: on Node 20 and 22 the first
 * `AsyncLocalStorage.run()` turns on promise hooks for every promise of the process, so a
 * build that enters a store would slow the other build too if they shared one, and the
 * comparison would not see it. Run as a script (`fork`), it builds the ref given as its
 * argument (none: the working tree), answers `ready`, then serves requests one at a time.
 */
import type { RateSample } from "./comparison.js";
import { type Call, InstantBackend, lockCalls, pushCalls, surfaceCalls } from "./gateway-calls.js";
import { buildAt, type PublishedBuild, publishedBuild } from "./published-build.js";

/** What the parent asks: a sample of `n` calls of figure `id`, or the settlement check. */
export type SideRequest = { type: "sample"; id: string; n: number } | { type: "check" };

/** What a side answers: ready (with the commit it built), a sample, the check done, or why not. */
export type SideReply =
  | { type: "ready"; commit: string | undefined; node: string }
  | { type: "sample"; sample: RateSample }
  | { type: "checked" }
  | { type: "error"; message: string };

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
 * One figure: `n` calls one after another, after a full GC, so no garbage of another sample
 * is collected in this one, and a pause, so the GC's background sweeping (which
 * process.cpuUsage counts) is done before the clock starts.
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

/** The child's loop: build, say ready, then answer each request in turn. */
async function serve(ref: string | undefined): Promise<void> {
  const send = (reply: SideReply) => process.send?.(reply);
  // The parent gone (interrupted, or done): nothing left to answer.
  process.on("disconnect", () => process.exit(0));
  let side: Side;
  let commit: string | undefined;
  try {
    const build = ref === undefined ? await publishedBuild() : await buildAt(ref);
    commit = "commit" in build ? (build.commit as string) : undefined;
    side = await sideOf(build);
  } catch (error) {
    send({ type: "error", message: error instanceof Error ? error.message : String(error) });
    return;
  }
  // One request at a time: the parent waits for each answer before it asks again.
  let queue = Promise.resolve();
  process.on("message", (request: SideRequest) => {
    queue = queue.then(async () => {
      try {
        if (request.type === "check") {
          side.check();
          send({ type: "checked" });
        } else {
          send({ type: "sample", sample: await sample(side, request.id, request.n) });
        }
      } catch (error) {
        send({ type: "error", message: error instanceof Error ? error.message : String(error) });
      }
    });
  });
  send({ type: "ready", commit, node: process.version });
}

if (process.send !== undefined && process.argv[1]?.endsWith("gateway-side.ts")) {
  await serve(process.argv[2]);
}
