/** What a won claim hands to the body. */
export interface Claim {
  readonly key: string;
  /** Rises on every (re)claim of the key while its record exists; never reused. */
  readonly fencingId: number;
  /** Epoch milliseconds, in the backend's own clock. */
  readonly leaseExpiresAt: number;
}

/** The answer of {@link LockBackend.claim}. */
export type ClaimOutcome =
  | { readonly status: "won"; readonly claim: Claim }
  /** The key completed within its ttl. */
  | { readonly status: "done" }
  /** A live holder elsewhere owns the key until `leaseExpiresAt`. */
  | { readonly status: "held"; readonly leaseExpiresAt: number };

/**
 * The backend port: three required methods. Every backend implements the transition
 * table of the record state machine (docs/state-machine.md) and is checked by the
 * contract suite in `gcp-pubsub-idempotency/testing`.
 */
export interface LockBackend {
  /** Atomically create, reclaim, or report the record of `key`. */
  claim(key: string, leaseMs: number): Promise<ClaimOutcome>;
  /** CLAIMED → DONE when the fence matches (no lease guard). False when fenced out. */
  complete(claim: Claim): Promise<boolean>;
  /** Expire the lease in place and advance the fence. Never deletes the record. */
  release(claim: Claim): Promise<void>;
  /** Optional: extend a claim whose fence still matches. False when fenced out. */
  renew?(claim: Claim, leaseMs: number): Promise<boolean>;
  /** Optional: delete records past their expiry; resolves to how many were removed. */
  purgeExpired?(): Promise<number>;
  close?(): Promise<void>;
}

/** Structured fields attached to a log line. */
export type LogFields = Record<string, unknown>;

/** The logger the gateway writes to. The default writes Cloud Logging JSON lines. */
export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/** Opt-in lease renewal while the body runs. */
export interface HeartbeatOptions {
  /** How often to renew; default a third of the lease. */
  everyMs?: number;
  /** Stop renewing after this long; default 60 minutes. */
  maxHoldMs?: number;
}

export interface LockOptions {
  backend: LockBackend;
  /** Mutual-exclusion window while the work runs; default {@link DEFAULT_LEASE_MS}. */
  leaseMs?: number;
  /** Renew the lease while the body runs (needs `backend.renew`). Off by default. */
  heartbeat?: boolean | HeartbeatOptions;
  /** Default: one JSON line per event with a `severity` field (Cloud Logging). */
  logger?: Logger;
  /**
   * When the key is held, keep re-claiming with a short jittered backoff for up to this
   * long before answering InProgress. Default 0 (answer at once). Keep it well below the
   * push ack deadline or the function timeout.
   */
  waitMs?: number;
}

/** The body of a `lock` or `mutex`: it gets the claim and a signal aborted on takeover. */
export type GuardedBody<T> = (claim: Claim, signal: AbortSignal) => T | Promise<T>;
