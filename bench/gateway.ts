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

/** Expected outcomes through a surface: a duplicate or a held key, per second on one core. */
export interface SurfacePathResult {
  /** the backend's claim() called bare */
  bareClaim: number;
  /** idempotentHttp over a parsed push body */
  http: number;
  /** idempotentMessage over a pull message */
  message: number;
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
  duplicate: SurfacePathResult;
  held: SurfacePathResult;
}

async function rate(n: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(n, 20_000); i++) await fn(); // warm up the JIT
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

export async function gatewayBench(cycles: number): Promise<GatewayResult> {
  const { lock } = (await publishedBuild()).core;
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
  const done: ClaimOutcome = { status: "done" };
  const held: ClaimOutcome = { status: "held", leaseExpiresAt: Date.now() + 60_000 };
  return {
    cycles,
    floor,
    lock: plain,
    withSignal,
    pushes,
    ...(await pushRates(backend, pushes)),
    deliveries,
    duplicate: await surfaceRates(new FixedAnswerBackend(done), deliveries),
    held: await surfaceRates(new FixedAnswerBackend(held), deliveries),
  };
}

/** A duplicate or a held key through each surface, beside the claim that decides it. */
async function surfaceRates(backend: LockBackend, n: number): Promise<SurfacePathResult> {
  const { core, testing } = await publishedBuild();
  const { idempotentHttp, idempotentMessage } = core;
  const { pushBody } = testing;
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
  const bareClaim = await rate(n, () => backend.claim("order-123", 60_000));
  const httpRate = await rate(n, () => http({ headers: {}, body }, res));
  const messageRate = await rate(n, () => message(pull));
  if (acks + nacks === 0) throw new Error("bench: idempotentMessage never settled the message");
  return { bareClaim, http: httpRate, message: messageRate };
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
