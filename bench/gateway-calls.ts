/**
 * What the gateway section times, made from one build: `lock()` over a backend that answers
 * at once, pushes through `idempotentHttp` with and without `auth`, a duplicate and a held key
 * through `idempotentHttp` and `idempotentMessage`, and the environment check every delivery
 * makes. The same calls are made from the working tree's build and, with `--against`, from a
 * commit's (bench/gateway.ts times one build, bench/gateway-against.ts two side by side).
 */
import type { Claim, ClaimOutcome, HttpResponseLike, LockBackend } from "gcp-pubsub-idempotency";
import type { PublishedBuild } from "./published-build.js";

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

/** One timed operation; its promise settles before the next call. */
export type Call = () => Promise<unknown>;

const logger = { info() {}, warn() {}, error() {} };

/** lock() over `backend`, and the floor: the same backend's claim + complete called bare. */
export function lockCalls(
  build: PublishedBuild,
  backend: LockBackend,
): { floor: Call; lock: Call; withSignal: Call } {
  const { lock } = build.core;
  const options = { backend, leaseMs: 60_000 };
  return {
    floor: async () => {
      const out = await backend.claim("k", 60_000);
      if (out.status === "won") await backend.complete(out.claim);
    },
    lock: () => lock("order-123", options, () => undefined),
    // The body declares the signal: an AbortController per call.
    withSignal: () => lock("order-123", options, (_claim, signal) => signal.aborted),
  };
}

/**
 * A push as a body parser leaves it, answered into a response that keeps nothing: without
 * `auth`, with one token for every push (as Pub/Sub sends it until it nears expiry), and with
 * a new token each push from `tokens` signed here, beforehand, taken in turn. A verifier keeps
 * 256 accepted tokens, oldest out first: with more than that, each comes back to it as new.
 */
export function pushCalls(
  build: PublishedBuild,
  backend: LockBackend,
  tokens: number,
): { push: Call; pushWithAuth: Call; pushWithNewToken: Call } {
  const { idempotentHttp } = build.core;
  const { createTestIdentity, pushBody } = build.testing;
  const identity = createTestIdentity();
  const authorization = identity.authorization();
  const iat = Math.floor(Date.now() / 1000);
  const signed = Array.from({ length: tokens }, (_, i) =>
    identity.authorization({ iat: iat - (i % 600), sub: `bench-${i}` }),
  );
  const body = pushBody({ orderId: "4711" }, { messageId: "bench-1" });
  const res: HttpResponseLike = { statusCode: 200, end: () => undefined };
  const plain = idempotentHttp({ backend, logger }, () => undefined);
  const authed = idempotentHttp({ backend, logger, auth: identity.auth }, () => undefined);
  const authedPush = async (token: string) => {
    await authed({ headers: { authorization: token }, body }, res);
    if (res.statusCode !== 204) throw new Error(`an authenticated push answered ${res.statusCode}`);
  };
  let next = 0;
  return {
    push: () => plain({ headers: {}, body }, res),
    pushWithAuth: () => authedPush(authorization),
    pushWithNewToken: () => authedPush(signed[next++ % signed.length]!),
  };
}

/** A duplicate or a held key through each surface, beside the claims that decide it. */
export interface SurfaceCalls {
  /** the fixed-answer backend's claim() called bare: a promise of a constant */
  bare: Call;
  /** InMemoryLock's claim() of a key in that state called bare: the cheapest real claim */
  memory: Call;
  /** idempotentHttp over a parsed push body */
  http: Call;
  /** idempotentMessage over a pull message */
  message: Call;
}

/**
 * The surfaces over a backend that answers at once with a done (duplicate) or held key, so
 * only our own code is timed, and InMemoryLock's claim of such a key; `check` throws when a
 * pull message was settled otherwise than that outcome asks (acked when done, nacked when held).
 */
export async function surfaceCalls(
  build: PublishedBuild,
  status: "done" | "held",
): Promise<{ calls: SurfaceCalls; check(): void }> {
  const { idempotentHttp, idempotentMessage, InMemoryLock } = build.core;
  const { pushBody } = build.testing;
  const answer: ClaimOutcome =
    status === "done"
      ? { status: "done" }
      : { status: "held", leaseExpiresAt: Date.now() + 60_000 };
  const backend = new FixedAnswerBackend(answer);
  const memory = new InMemoryLock();
  const won = await memory.claim("order-123", 3_600_000);
  if (won.status !== "won") throw new Error("bench: InMemoryLock did not grant a fresh key");
  if (status === "done") await memory.complete(won.claim);
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
  return {
    calls: {
      bare: () => backend.claim("order-123", 60_000),
      memory: () => memory.claim("order-123", 60_000),
      http: () => http({ headers: {}, body }, res),
      message: () => message(pull),
    },
    check() {
      if (status === "done" ? nacks > 0 || acks === 0 : acks > 0 || nacks === 0) {
        throw new Error(`bench: a ${status} key was settled ${acks} ack(s), ${nacks} nack(s)`);
      }
    },
  };
}
