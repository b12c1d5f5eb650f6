/**
 * The gateway's own cost: lock() cycles per second over a backend that answers at once,
 * beside the same backend calls made bare (the floor), sequentially, so on one core. The
 * gateway and the surfaces are the published build's (bench/published-build.ts); the calls
 * timed are bench/gateway-calls.ts's.
 */
import { InstantBackend, lockCalls, pushCalls, surfaceCalls } from "./gateway-calls.js";
import { publishedBuild } from "./published-build.js";

/**
 * Expected outcomes through a surface: a duplicate or a held key, one delivery after another.
 * Each figure is the median over interleaved rounds; `…PerCpuSecond` counts deliveries per
 * second of this process's CPU time (user + system), which a busy machine disturbs far less
 * than wall-clock rates.
 */
export interface SurfacePathResult {
  /** the fixed-answer backend's claim() called bare: a promise of a constant */
  bareClaim: number;
  /** InMemoryLock's claim() of a done (or held) key called bare: the cheapest real claim */
  memoryClaim: number;
  /** idempotentHttp over a parsed push body, deliveries per second */
  http: number;
  /** idempotentMessage over a pull message, deliveries per second */
  message: number;
  httpPerCpuSecond: number;
  messagePerCpuSecond: number;
  rounds: number;
  /** Round by round (the four took turns inside each round): the spread of each figure. */
  perRound: {
    memoryClaim: number[];
    httpPerCpuSecond: number[];
    messagePerCpuSecond: number[];
  };
}

export interface GatewayResult {
  cycles: number;
  /** claim + complete called bare, per second */
  floor: number;
  /** lock() with a body that takes no signal */
  lock: number;
  /** lock() with a body that declares the signal (an AbortController per call) */
  withSignal: number;
  /** pushes timed through idempotentHttp (fewer than cycles: one RSA verify each with auth) */
  pushes: number;
  /** idempotentHttp over a parsed push body, per second */
  push: number;
  /** with `auth`, one token for every push, as Pub/Sub sends it until it nears expiry */
  pushWithAuth: number;
  /** with `auth`, a new token each push: the RS256 signature verified every time */
  pushWithNewTokens: number;
  /** how many pushes the new-token rate was timed over (each token is signed beforehand) */
  newTokens: number;
  /** deliveries timed per surface path */
  deliveries: number;
  /**
   * CPU µs of one `gatewayDisabled()` call (the `GCP_PUBSUB_IDEMPOTENCY_DISABLED` read every
   * delivery makes), median over the rounds.
   */
  disabledCheckUs: number;
  duplicate: SurfacePathResult;
  held: SurfacePathResult;
}

async function rate(n: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(n, 20_000); i++) await fn(); // warm up the JIT
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

export async function gatewayBench(cycles: number, rounds: number): Promise<GatewayResult> {
  const build = await publishedBuild();
  const backend = new InstantBackend();
  const calls = lockCalls(build, backend);
  const floor = await rate(cycles, calls.floor);
  const plain = await rate(cycles, calls.lock);
  const withSignal = await rate(cycles, calls.withSignal);
  const pushes = Math.max(1_000, Math.round(cycles / 100));
  const deliveries = Math.max(1_000, Math.round(cycles / 4));
  const newTokens = Math.min(pushes, 2_000);
  return {
    cycles,
    floor,
    lock: plain,
    withSignal,
    pushes,
    ...(await pushRates(pushCalls(build, backend, newTokens), pushes, newTokens)),
    deliveries,
    duplicate: await surfaceRates(await surfaceCalls(build, "done"), deliveries, rounds),
    held: await surfaceRates(await surfaceCalls(build, "held"), deliveries, rounds),
    disabledCheckUs: disabledCheck(build.core.gatewayDisabled, deliveries, rounds),
  };
}

/** CPU µs per call of the environment check every delivery makes, median over rounds. */
function disabledCheck(check: () => boolean, n: number, rounds: number): number {
  let sink = 0;
  const perCall: number[] = [];
  for (let round = 0; round <= rounds; round++) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < n; i++) if (check()) sink++;
    const used = process.cpuUsage(cpu);
    // Round 0 warms the JIT up and is not kept.
    if (round > 0) perCall.push((used.user + used.system) / n);
  }
  if (sink > 0) throw new Error("bench: GCP_PUBSUB_IDEMPOTENCY_DISABLED is set; unset it to bench");
  return median(perCall);
}

/** Rate and CPU time per call of `fn`, called `n` times one after another. */
async function timed(n: number, fn: () => Promise<unknown>): Promise<[number, number]> {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  const wall = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  return [n / wall, n / ((used.user + used.system) / 1e6)];
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/**
 * A duplicate or a held key through each surface, beside the claims that decide it;
 * InMemoryLock's claim of such a key is the reference the target's "within 3× of a bare
 * claim" is read against (a claim that returns a constant promise is no claim at all).
 */
async function surfaceRates(
  { calls, check }: Awaited<ReturnType<typeof surfaceCalls>>,
  n: number,
  rounds: number,
): Promise<SurfacePathResult> {
  const perRound = Math.max(1, Math.round(n / rounds));
  const warm = Math.min(perRound, 20_000);
  for (const call of Object.values(calls)) for (let i = 0; i < warm; i++) await call();
  const seen: Record<keyof typeof calls, Array<[number, number]>> = {
    bare: [],
    memory: [],
    http: [],
    message: [],
  };
  // The four take turns round after round, in alternating order, so load hits them alike.
  const order = Object.keys(calls) as Array<keyof typeof calls>;
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 === 0 ? order : [...order].reverse()) {
      seen[name].push(await timed(perRound, calls[name]));
    }
  }
  check();
  const rate = (name: keyof typeof calls) => median(seen[name].map(([r]) => r));
  const perCpu = (name: keyof typeof calls) => median(seen[name].map(([, c]) => c));
  return {
    bareClaim: rate("bare"),
    memoryClaim: rate("memory"),
    http: rate("http"),
    message: rate("message"),
    httpPerCpuSecond: perCpu("http"),
    messagePerCpuSecond: perCpu("message"),
    rounds,
    perRound: {
      memoryClaim: seen.memory.map(([r]) => r),
      httpPerCpuSecond: seen.http.map(([, c]) => c),
      messagePerCpuSecond: seen.message.map(([, c]) => c),
    },
  };
}

/** Pushes through idempotentHttp without and with `auth`, then each new token once. */
async function pushRates(calls: ReturnType<typeof pushCalls>, pushes: number, newTokens: number) {
  const push = await rate(pushes, calls.push);
  const pushWithAuth = await rate(pushes, calls.pushWithAuth);
  // No warm-up here: each token must be new to the verifier when it is timed.
  const start = process.hrtime.bigint();
  for (let i = 0; i < newTokens; i++) await calls.pushWithNewToken();
  const pushWithNewTokens = newTokens / (Number(process.hrtime.bigint() - start) / 1e9);
  return { push, pushWithAuth, pushWithNewTokens, newTokens };
}
