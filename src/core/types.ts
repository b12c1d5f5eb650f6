/**
 * What a won claim hands to the body of {@link lock} or {@link mutex}.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, type Claim } from "gcp-pubsub-idempotency";
 *
 * await lock("orders:42", { backend: new InMemoryLock() }, async (claim: Claim) => {
 *   // Pass the fence to a store that can refuse stale writers.
 *   console.log(claim.key, claim.fencingId, new Date(claim.leaseExpiresAt));
 * });
 * ```
 */
export interface Claim {
  /** The idempotency key that was claimed. */
  readonly key: string;
  /** Rises on every (re)claim of the key while its record exists; never reused. */
  readonly fencingId: number;
  /** Epoch milliseconds, in the backend's own clock. */
  readonly leaseExpiresAt: number;
}

/**
 * The answer of {@link LockBackend.claim}: the claim was won, the key is done (within its
 * ttl), or a live holder elsewhere owns it.
 *
 * @example
 * ```ts
 * import { InMemoryLock, type ClaimOutcome } from "gcp-pubsub-idempotency";
 *
 * const outcome: ClaimOutcome = await new InMemoryLock().claim("orders:42", 30_000);
 * if (outcome.status === "won") console.log("fence", outcome.claim.fencingId);
 * else if (outcome.status === "held") console.log("busy until", outcome.leaseExpiresAt);
 * ```
 */
export type ClaimOutcome =
  | {
      /** This caller now holds the key. */
      readonly status: "won";
      /** Hand it to `complete`, `release` or `renew`. */
      readonly claim: Claim;
    }
  | {
      /** The key completed within its ttl. */
      readonly status: "done";
    }
  | {
      /** A live holder elsewhere owns the key. */
      readonly status: "held";
      /** When that holder's lease ends, epoch ms in the backend's clock. */
      readonly leaseExpiresAt: number;
    };

/**
 * The backend port: three required methods. Every backend implements the transition
 * table of the record state machine (docs/state-machine.md) and is checked by the
 * contract suite in `gcp-pubsub-idempotency/testing`. Implement it to bring your own store.
 *
 * @example
 * ```ts
 * import { InMemoryLock, type LockBackend } from "gcp-pubsub-idempotency";
 *
 * const backend: LockBackend = new InMemoryLock();
 * const outcome = await backend.claim("orders:42", 30_000);
 * if (outcome.status === "won") await backend.complete(outcome.claim);
 * ```
 */
export interface LockBackend {
  /** Atomically create, reclaim, or report the record of `key` for a lease of `leaseMs`. */
  claim(key: string, leaseMs: number): Promise<ClaimOutcome>;
  /** CLAIMED → DONE when the fence matches (no lease guard). False when fenced out. */
  complete(claim: Claim): Promise<boolean>;
  /** Expire the lease in place and advance the fence. Never deletes the record. */
  release(claim: Claim): Promise<void>;
  /** Optional: extend a claim whose fence still matches. False when fenced out. */
  renew?(claim: Claim, leaseMs: number): Promise<boolean>;
  /** Optional: delete records past their expiry; resolves to how many were removed. */
  purgeExpired?(): Promise<number>;
  /** Optional: free what the backend itself owns. A client you passed in stays open. */
  close?(): Promise<void>;
}

/**
 * Structured fields attached to a log line; the default logger merges them into the JSON.
 *
 * @example
 * ```ts
 * import { jsonLogger, type LogFields } from "gcp-pubsub-idempotency";
 *
 * const fields: LogFields = { key: "orders:42", outcome: "duplicate" };
 * jsonLogger.info("duplicate delivery skipped", fields);
 * ```
 */
export type LogFields = Record<string, unknown>;

/**
 * The logger the verbs and the gateway write to. The default, {@link jsonLogger}, writes
 * Cloud Logging JSON lines; pass your own to route them elsewhere.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, type Logger } from "gcp-pubsub-idempotency";
 *
 * const logger: Logger = {
 *   info: (message, fields) => console.log(message, fields),
 *   warn: (message, fields) => console.warn(message, fields),
 *   error: (message, fields) => console.error(message, fields),
 * };
 * await lock("orders:42", { backend: new InMemoryLock(), logger }, async () => {});
 * ```
 */
export interface Logger {
  /** Routine events, e.g. a duplicate skipped. */
  info(message: string, fields?: LogFields): void;
  /** Expected trouble, e.g. contention on a key or a failed heartbeat renewal. */
  warn(message: string, fields?: LogFields): void;
  /** Needs attention, e.g. a fenced-out complete (`alert: true`) or a failed release. */
  error(message: string, fields?: LogFields): void;
}

/**
 * Opt-in lease renewal while the body runs (`heartbeat` in {@link LockOptions}). Needs a
 * backend with `renew`; a renewal that finds the key taken over aborts the body's signal.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, type HeartbeatOptions } from "gcp-pubsub-idempotency";
 *
 * const heartbeat: HeartbeatOptions = { everyMs: 10_000, maxHoldMs: 30 * 60_000 };
 * await lock("reports:daily", { backend: new InMemoryLock(), leaseMs: 30_000, heartbeat },
 *   async (_claim, signal) => {
 *     if (signal.aborted) throw signal.reason;
 *   });
 * ```
 */
export interface HeartbeatOptions {
  /** How often to renew, in ms; default a third of the lease. Must be shorter than the lease. */
  everyMs?: number;
  /** Stop renewing after this long, in ms; default {@link DEFAULT_MAX_HOLD_MS} (60 minutes). */
  maxHoldMs?: number;
}

/**
 * Options of {@link lock} and {@link mutex}. Only `backend` is required; bad values throw
 * {@link InvalidConfiguration} before any I/O.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, type LockOptions } from "gcp-pubsub-idempotency";
 *
 * const options: LockOptions = { backend: new InMemoryLock(), leaseMs: 60_000, waitMs: 500 };
 * await lock("orders:42", options, async () => {});
 * ```
 */
export interface LockOptions {
  /** The store that holds the records, e.g. `InMemoryLock`, `RedisLock`, `DatastoreLock`. */
  backend: LockBackend;
  /** Mutual-exclusion window while the work runs, in ms; default {@link DEFAULT_LEASE_MS}. */
  leaseMs?: number;
  /** Renew the lease while the body runs (needs `backend.renew`). Off by default. */
  heartbeat?: boolean | HeartbeatOptions;
  /** Default {@link jsonLogger}: one JSON line per event with a `severity` field (Cloud Logging). */
  logger?: Logger;
  /**
   * When the key is held, keep re-claiming with a short jittered backoff for up to this
   * many ms before answering InProgress. Default 0 (answer at once). Keep it well below the
   * push ack deadline or the function timeout.
   */
  waitMs?: number;
}

/**
 * The body of a `lock` or `mutex`: it gets the claim and a signal that is aborted when a
 * heartbeat finds the key taken over.
 *
 * @example
 * ```ts
 * import { InMemoryLock, mutex, type GuardedBody } from "gcp-pubsub-idempotency";
 *
 * const body: GuardedBody<number> = async (claim, signal) => {
 *   signal.throwIfAborted();
 *   return claim.fencingId;
 * };
 * const fence = await mutex("po:4711", { backend: new InMemoryLock() }, body);
 * ```
 */
export type GuardedBody<T> = (claim: Claim, signal: AbortSignal) => T | Promise<T>;
