/**
 * The gateway's own cost: lock() cycles per second over a backend that answers at once,
 * beside the same backend calls made bare (the floor), sequentially, so on one core. The
 * gateway and the surfaces are the published build's (bench/published-build.ts).
 */
import type { Claim, ClaimOutcome, HttpResponseLike, LockBackend } from "gcp-pubsub-idempotency";
import { publishedBuild } from "./published-build.js";

/** Always wins, completes and releases: no store at all, so only our own work is timed. */
export class InstantBackend implements LockBackend {
  private fence = 0;
  async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    this.fence++;
    return { status: "won", claim: { key, fencingId: this.fence, leaseExpiresAt: leaseMs } };
  }
  async complete(_claim: Claim): Promise<boolean> {
    return true;
  }
  async release(_claim: Claim): Promise<void> {}
}

/** Answers every claim with one fixed outcome: a done key (duplicate) or a held one. */
class FixedAnswerBackend implements LockBackend {
  constructor(private readonly answer: ClaimOutcome) {}
  async claim(_key: string, _leaseMs: number): Promise<ClaimOutcome> {
    return this.answer;
  }
  async complete(_claim: Claim): Promise<boolean> {
    throw new Error("bench: a fixed-answer backend never has a claim to complete");
  }
  async release(_claim: Claim): Promise<void> {}
}

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
  const { lock, gatewayDisabled } = (await publishedBuild()).core;
  const backend = new InstantBackend();
  const options = { backend, leaseMs: 60_000 };
  const floor = await rate(cycles, async () => {
    const out = await backend.claim("k", 60_000);
    if (out.status === "won") await backend.complete(out.claim);
  });
  const plain = await rate(cycles, () => lock("order-123", options, () => undefined));
  const withSignal = await rate(cycles, () =>
    lock("order-123", options, (_claim, signal) => signal.aborted),
  );
  const pushes = Math.max(1_000, Math.round(cycles / 100));
  const deliveries = Math.max(1_000, Math.round(cycles / 4));
  return {
    cycles,
    floor,
    lock: plain,
    withSignal,
    pushes,
    ...(await pushRates(backend, pushes)),
    deliveries,
    duplicate: await surfaceRates("done", deliveries, rounds),
    held: await surfaceRates("held", deliveries, rounds),
    disabledCheckUs: disabledCheck(gatewayDisabled, deliveries, rounds),
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
 * A duplicate or a held key through each surface, beside the claims that decide it: the
 * surfaces run over a backend that answers at once with a fixed outcome, so only our own code
 * is timed; InMemoryLock's claim of such a key is the reference the target's "within 3× of a
 * bare claim" is read against (a claim that returns a constant promise is no claim at all).
 */
async function surfaceRates(
  status: "done" | "held",
  n: number,
  rounds: number,
): Promise<SurfacePathResult> {
  const { core, testing } = await publishedBuild();
  const { idempotentHttp, idempotentMessage, InMemoryLock } = core;
  const { pushBody } = testing;
  const answer: ClaimOutcome =
    status === "done"
      ? { status: "done" }
      : { status: "held", leaseExpiresAt: Date.now() + 60_000 };
  const backend = new FixedAnswerBackend(answer);
  const memory = new InMemoryLock();
  const won = await memory.claim("order-123", 3_600_000);
  if (won.status !== "won") throw new Error("bench: InMemoryLock did not grant a fresh key");
  if (status === "done") await memory.complete(won.claim);
  const logger = { info() {}, warn() {}, error() {} };
  const body = pushBody({ orderId: "4711" }, { messageId: "bench-1" });
  const res: HttpResponseLike = { statusCode: 200, end: () => undefined };
  const http = idempotentHttp({ backend, logger }, () => {
    throw new Error("bench: the handler ran on a duplicate or held key");
  });
  const message = idempotentMessage({ backend, logger }, () => {
    throw new Error("bench: the handler ran on a duplicate or held key");
  });
  let acks = 0;
  let nacks = 0;
  const pull = {
    id: "bench-1",
    data: Buffer.from("{}"),
    attributes: {},
    ack: () => {
      acks++;
    },
    nack: () => {
      nacks++;
    },
  };
  const calls = {
    bare: () => backend.claim("order-123", 60_000),
    memory: () => memory.claim("order-123", 60_000),
    http: () => http({ headers: {}, body }, res),
    message: () => message(pull),
  };
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
  if (status === "done" ? nacks > 0 || acks === 0 : acks > 0 || nacks === 0) {
    throw new Error(`bench: a ${status} key was settled ${acks} ack(s), ${nacks} nack(s)`);
  }
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

/** A push as a body parser leaves it, answered into a response that keeps nothing. */
async function pushRates(backend: LockBackend, pushes: number) {
  const { core, testing } = await publishedBuild();
  const { idempotentHttp } = core;
  const { createTestIdentity, pushBody } = testing;
  const identity = createTestIdentity();
  const authorization = identity.authorization();
  const newTokens = Math.min(pushes, 2_000);
  const iat = Math.floor(Date.now() / 1000);
  const tokens = Array.from({ length: newTokens }, (_, i) =>
    identity.authorization({ iat: iat - (i % 600), sub: `bench-${i}` }),
  );
  const body = pushBody({ orderId: "4711" }, { messageId: "bench-1" });
  const res: HttpResponseLike = { statusCode: 200, end: () => undefined };
  const logger = { info() {}, warn() {}, error() {} };
  const plain = idempotentHttp({ backend, logger }, () => undefined);
  const authed = idempotentHttp({ backend, logger, auth: identity.auth }, () => undefined);
  const push = await rate(pushes, () => plain({ headers: {}, body }, res));
  const authedPush = async (token: string) => {
    await authed({ headers: { authorization: token }, body }, res);
    if (res.statusCode !== 204) throw new Error(`an authenticated push answered ${res.statusCode}`);
  };
  const pushWithAuth = await rate(pushes, () => authedPush(authorization));
  // No warm-up here: each token must be new to the verifier when it is timed.
  let next = 0;
  const start = process.hrtime.bigint();
  for (const token of tokens) {
    next += 1;
    await authedPush(token);
  }
  const pushWithNewTokens = next / (Number(process.hrtime.bigint() - start) / 1e9);
  return { push, pushWithAuth, pushWithNewTokens, newTokens };
}
