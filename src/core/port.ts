// The backend port: what a store implements (LockBackend and its optional calls), what it
// answers, and the transactional extension lockInTransaction needs. Backends depend on this
// file; the engine calls through it.
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
  /**
   * Rises on every (re)claim of the key; never reused, even after the record is deleted (a new
   * record starts above every fence the key had). Opaque: not 1 for a fresh key on most stores.
   */
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
      /** The fingerprint stored with the record, when its claim gave one. */
      readonly fingerprint?: string | undefined;
      /** The encoded result `complete` stored, when it was given one (once(), step()). */
      readonly result?: string | undefined;
    }
  | {
      /** A live holder elsewhere owns the key. */
      readonly status: "held";
      /** When that holder's lease ends, epoch ms in the backend's clock. */
      readonly leaseExpiresAt: number;
      /** The fingerprint the holder's claim stored, when it gave one. */
      readonly fingerprint?: string | undefined;
    };

/**
 * What a claim may store beyond the lease: the payload's fingerprint. A backend whose
 * {@link BackendSupport} has `fingerprints` stores it with the record it wins (and drops
 * any earlier one), and answers `done` and `held` with the fingerprint stored.
 *
 * @example
 * ```ts
 * import { InMemoryLock, type ClaimOptions } from "gcp-pubsub-idempotency";
 *
 * const options: ClaimOptions = { fingerprint: "sha256:9f2c…" };
 * const outcome = await new InMemoryLock().claim("orders:42", 30_000, options);
 * ```
 */
export interface ClaimOptions {
  /** An opaque text naming the payload; compared by the engine, never by the store. */
  readonly fingerprint?: string | undefined;
}

/**
 * What a backend stores beyond the state machine's own fields. `once()`, `step()` and a
 * fingerprint are refused, when a verb or surface is built, on a backend without them.
 *
 * @example
 * ```ts
 * import type { BackendSupport } from "gcp-pubsub-idempotency";
 *
 * const supports: BackendSupport = { results: true, fingerprints: true, maxResultBytes: 1 << 20 };
 * ```
 */
export interface BackendSupport {
  /** `complete(claim, result)` stores the result and `claim` answers it with `done`. */
  readonly results: boolean;
  /** `claim(key, leaseMs, { fingerprint })` stores it and answers it with `done` and `held`. */
  readonly fingerprints: boolean;
  /** The largest result, in UTF-8 bytes, the store can keep with a record. */
  readonly maxResultBytes: number;
}

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
  /**
   * Atomically create, reclaim, or report the record of `key` for a lease of `leaseMs`. A
   * backend that supports fingerprints stores `options.fingerprint` with the record it wins.
   */
  claim(key: string, leaseMs: number, options?: ClaimOptions): Promise<ClaimOutcome>;
  /**
   * CLAIMED → DONE when the fence matches (no lease guard). False when fenced out. A backend
   * that supports results stores `result` with the DONE record, in the same write.
   */
  complete(claim: Claim, result?: string): Promise<boolean>;
  /** Expire the lease in place and advance the fence. Never deletes the record. */
  release(claim: Claim): Promise<void>;
  /** Optional: extend a claim whose fence still matches. False when fenced out. */
  renew?(claim: Claim, leaseMs: number): Promise<boolean>;
  /**
   * Optional: delete records past their expiry; resolves to how many were removed. A backend
   * that deletes in batches reports the running count to `options.onProgress` after each.
   */
  purgeExpired?(options?: PurgeOptions): Promise<number>;
  /** Optional: free what the backend itself owns. A client you passed in stays open. */
  close?(): Promise<void>;
  /** Optional: what the backend stores beyond the lease (results, fingerprints). None when absent. */
  readonly supports?: BackendSupport | undefined;

  // Operator calls, for the CLI (`gcp-pubsub-idempotency inspect | release`) and tools like it.
  /**
   * Optional: read the record of `key` as stored, with the store's time of the read; undefined
   * when there is none. A record past its `expiresAt` that the store has not deleted yet is
   * returned as it is (it answers every call as if absent).
   */
  inspect?(key: string): Promise<InspectedRecord | undefined>;
  /**
   * Optional: free a stuck claim of `key` whose fence is still `fencingId` (the one the operator
   * saw): the fence rises and the lease ends now, so the next claim wins at `fencingId + 2` and
   * the old holder, should it still run, is fenced out. Never touches a done record.
   */
  forceRelease?(key: string, fencingId: number): Promise<ForceReleaseOutcome>;
}

/**
 * Options of {@link LockBackend.purgeExpired}.
 *
 * @example
 * ```ts
 * import { InMemoryLock, type PurgeOptions } from "gcp-pubsub-idempotency";
 *
 * const options: PurgeOptions = { onProgress: (deleted) => console.log(`${deleted} deleted`) };
 * const removed = await new InMemoryLock().purgeExpired(options);
 * ```
 */
export interface PurgeOptions {
  /** Called with the number of records deleted so far, after each batch. */
  onProgress?(deleted: number): void;
}

/**
 * One record as {@link LockBackend.inspect} reads it. Every time is epoch ms in the store's own
 * clock (Redis `TIME`, SQL `now()`, Spanner's; Datastore's and Firestore's as read or
 * bounded from their answers), `now` included: compare them with `now`, not with this machine's `Date.now()`.
 *
 * @example
 * ```ts
 * import { InMemoryLock, type InspectedRecord } from "gcp-pubsub-idempotency";
 *
 * const backend = new InMemoryLock();
 * await backend.claim("orders:42", 30_000);
 * const record: InspectedRecord | undefined = await backend.inspect("orders:42");
 * if (record?.state === "claimed" && record.now < record.leaseExpiresAt) {
 *   console.log(`held at fence ${record.fencingId} for ${record.leaseExpiresAt - record.now} ms`);
 * }
 * ```
 */
export interface InspectedRecord {
  /** The idempotency key. */
  readonly key: string;
  /** `claimed` (a lease, live or lapsed) or `done`. */
  readonly state: "claimed" | "done";
  /** The record's current fence. */
  readonly fencingId: number;
  /** When the lease ends (claimed) or ended (done), epoch ms in the store's clock. */
  readonly leaseExpiresAt: number;
  /** The earliest moment the record may be deleted; from then on it counts as absent. */
  readonly expiresAt: number;
  /** The store's clock when the record was read, epoch ms. */
  readonly now: number;
  /** The fingerprint stored with the record, when there is one. */
  readonly fingerprint?: string | undefined;
  /** The encoded result stored with a done record, when there is one. */
  readonly result?: string | undefined;
}

/**
 * What {@link LockBackend.forceRelease} did: `released` (the record's new fence), or nothing,
 * because the record is `done`, `absent` (or expired), or `changed`: its fence is no longer the
 * one given (its holder released or completed it, or another claim won it since).
 *
 * @example
 * ```ts
 * import { InMemoryLock, type ForceReleaseOutcome } from "gcp-pubsub-idempotency";
 *
 * const backend = new InMemoryLock();
 * await backend.claim("orders:42", 30_000);
 * const outcome: ForceReleaseOutcome = await backend.forceRelease("orders:42", 1);
 * if (outcome.status === "released") console.log("next claim wins at", outcome.fencingId + 1);
 * ```
 */
export type ForceReleaseOutcome =
  | {
      /** The claim was freed: its lease ended now and its fence rose. */
      readonly status: "released";
      /** The record's fence after the release. */
      readonly fencingId: number;
    }
  | {
      /** The record's fence is not the one given: left alone. */
      readonly status: "changed";
      /** The record's current fence. */
      readonly fencingId: number;
    }
  | {
      /** A done record is never released: its key stays a duplicate until its expiry. */
      readonly status: "done";
    }
  | {
      /** No record, or one past its expiry. */
      readonly status: "absent";
    };

/**
 * What {@link TransactionalLockBackend.completeInTransaction} resolves to.
 *
 * @example
 * ```ts
 * import type { TransactionCompletion } from "gcp-pubsub-idempotency";
 *
 * const rolledBack: TransactionCompletion<string> = { completed: false, value: "order-7" };
 * if (!rolledBack.completed) console.warn("fenced out: nothing of", rolledBack.value, "landed");
 * ```
 */
export interface TransactionCompletion<T> {
  /**
   * True: DONE was committed together with the body's writes. False: the fence was stale
   * (another delivery reclaimed the key) and the transaction was rolled back; nothing landed.
   */
  readonly completed: boolean;
  /** What the body returned (its last run, on a store that may run it more than once). */
  readonly value: T;
}

/**
 * A {@link LockBackend} that can complete a claim inside a transaction of its store, together
 * with the caller's own writes: what {@link lockInTransaction} needs. `Tx` is the store's own
 * transaction handle (a pg `PoolClient`, a Firestore `Transaction`, …). SqlLock, DatastoreLock,
 * FirestoreLock and SpannerLock implement it; implement it to offer the same on your own store, and run
 * the contract suite with a `transactional` adapter to check it.
 *
 * @example
 * ```ts
 * import type { Claim, TransactionalLockBackend, TransactionCompletion } from "gcp-pubsub-idempotency";
 *
 * interface MyTx { put(table: string, row: object): void }
 * declare const base: Omit<TransactionalLockBackend<MyTx>, "completeInTransaction">;
 * declare function inMyStore<T>(run: (tx: MyTx) => Promise<T>): Promise<T>;
 * declare function completeIn(tx: MyTx, claim: Claim): Promise<boolean>;
 *
 * const backend: TransactionalLockBackend<MyTx> = {
 *   ...base,
 *   async completeInTransaction<T>(claim: Claim, body: (tx: MyTx) => Promise<T>) {
 *     let outcome: TransactionCompletion<T> | undefined;
 *     // A real backend rolls back when completeIn answers false (fenced out).
 *     await inMyStore(async (tx) => {
 *       const value = await body(tx);
 *       outcome = { completed: await completeIn(tx, claim), value };
 *     });
 *     return outcome!;
 *   },
 * };
 * ```
 */
export interface TransactionalLockBackend<Tx> extends LockBackend {
  /**
   * Open a transaction, run `body` with its handle, then in that same transaction complete
   * `claim` (claimed → done only while the fence matches) and commit: the body's writes and
   * DONE land together. A stale fence rolls back and resolves `completed: false`. A body that
   * throws rolls back and rejects with its error as thrown; a failed begin, complete or commit
   * rolls back and rejects (a `BackendError`). It never releases the claim: the verb does.
   */
  completeInTransaction<T>(
    claim: Claim,
    body: (tx: Tx) => Promise<T>,
  ): Promise<TransactionCompletion<T>>;
}

/**
 * The transaction handle a backend hands to {@link lockInTransaction}'s body: `TransactionOf<typeof backend>`.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import type { TransactionOf } from "gcp-pubsub-idempotency";
 * import { SqlLock } from "gcp-pubsub-idempotency/sql";
 *
 * const backend = new SqlLock({ client: new pg.Pool() });
 * async function insertOrder(tx: TransactionOf<typeof backend>, id: string): Promise<void> {
 *   await tx.query("INSERT INTO orders (id) VALUES ($1)", [id]); // tx is a pg PoolClient
 * }
 * ```
 */
export type TransactionOf<B> = B extends TransactionalLockBackend<infer Tx> ? Tx : never;
