import { type RetryPolicy, withRetry } from "../../core/retry.js";
import {
  claimTransition,
  clockFence,
  completeTransition,
  type Decide,
  forceReleaseTransition,
  inspectTransition,
  releaseTransition,
  renewTransition,
  unlessLapsed,
} from "../../core/transitions.js";
import type {
  Claim,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  PurgeOptions,
  TransactionCompletion,
} from "../../core/types.js";
import { assertFencingId, assertPositiveMs, assertValidKey } from "../../core/validate.js";
import { type PurgeBatch, purgeInBatches } from "../shared/purge.js";
import { callStore, callStoreWithBody } from "../shared/store-call.js";
import { isGoogleTransient, type LazyClient, newToken } from "./options.js";

/** Run `attempt` again on transient errors, within the lock's retry policy. */
export type Retrying = <T>(attempt: () => Promise<T>) => Promise<T>;

/** The I/O of one Google store: how it reads and writes a record, nothing of the table. */
export interface RecordIo<C, Tx> {
  /** The backend a BackendError names: `datastore` or `firestore`. */
  readonly backend: string;
  /** Records per purge batch. */
  readonly purgeBatchSize: number;
  /**
   * True when the store's clock is the time (SpannerLock): `claim` judges the lapse of a win
   * itself, by the commit timestamp. Otherwise it is this process's clock, judged here.
   */
  readonly storeClock?: boolean;
  /** Claim `key` as `decide` says, by the store's fastest safe path (falling back to `update`). */
  claim(client: C, key: string, decide: Decide<ClaimOutcome>): Promise<ClaimOutcome>;
  /** Read the record of `key`, let `decide` choose, and store its write atomically. */
  update<A>(client: C, key: string, decide: Decide<A>): Promise<A>;
  /**
   * Run `body` in a store transaction, then apply `decide` (the complete) to the record in
   * that same transaction: commit both when it writes (`complete.claimed`), roll back
   * otherwise. Retried as the store's transactions are (the body with them).
   */
  completeInTransaction<T>(
    client: C,
    key: string,
    body: (tx: Tx) => Promise<T>,
    decide: Decide<boolean>,
    retrying: Retrying,
  ): Promise<TransactionCompletion<T>>;
  /** Delete one batch of expired records, each judged again by `purgeTransition` first. */
  purgeBatch(client: C, retrying: Retrying): Promise<PurgeBatch>;
  /** Free a client the lock made itself. */
  end(client: C): Promise<void>;
}

/**
 * The LockBackend calls of DatastoreLock, FirestoreLock and SpannerLock: the transition table
 * (core/transitions.ts) applied with the time the io reads (this process's clock, or
 * Spanner's), each call retried on transient
 * errors and its failures wrapped by `callStore`. The locks supply only their {@link RecordIo}.
 */
export class GoogleRecords<C, Tx> {
  constructor(
    private readonly io: RecordIo<C, Tx>,
    private readonly client: LazyClient<C>,
    private readonly ttlMs: number,
    private readonly retry: RetryPolicy,
  ) {}

  async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    // One token per call, shared by its retries: a retry that finds it knows its write landed.
    const call = { key, leaseMs, ttlMs: this.ttlMs, token: newToken() };
    const outcome = await this.run("claim", key, (client) =>
      this.io.claim(client, key, (record, now) =>
        claimTransition(record, now, call, clockFence(now)),
      ),
    );
    return this.io.storeClock === true ? outcome : unlessLapsed(outcome, Date.now());
  }

  async complete(claim: Claim): Promise<boolean> {
    assertValidKey(claim.key);
    const call = { claim, ttlMs: this.ttlMs };
    return this.update("complete", claim.key, (record, now) =>
      completeTransition(record, now, call),
    );
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    const call = { claim, ttlMs: this.ttlMs };
    await this.update("release", claim.key, (record, now) => releaseTransition(record, now, call));
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    const call = { claim, leaseMs, ttlMs: this.ttlMs };
    return this.update("renew", claim.key, (record, now) => renewTransition(record, now, call));
  }

  /** The complete in the store transaction of `body`'s writes; the body's error as thrown. */
  completeInTransaction<T>(
    claim: Claim,
    body: (tx: Tx) => Promise<T>,
  ): Promise<TransactionCompletion<T>> {
    assertValidKey(claim.key);
    const call = { claim, ttlMs: this.ttlMs };
    const decide: Decide<boolean> = (record, now) => completeTransition(record, now, call);
    return callStoreWithBody(
      this.io.backend,
      "completeInTransaction",
      claim.key,
      body,
      async (watched) => {
        const client = await this.client.get();
        return this.io.completeInTransaction(client, claim.key, watched, decide, this.retrying);
      },
    );
  }

  /** Batches until one comes back short; each batch (not the whole purge) is retried. */
  purgeExpired(options?: PurgeOptions): Promise<number> {
    return callStore(this.io.backend, "purgeExpired", undefined, async () => {
      const client = await this.client.get();
      return purgeInBatches(
        this.io.purgeBatchSize,
        () => this.io.purgeBatch(client, this.retrying),
        options?.onProgress,
      );
    });
  }

  // Operator calls (the CLI's inspect and release): the same read-decide-write as every call.

  async inspect(key: string): Promise<InspectedRecord | undefined> {
    assertValidKey(key);
    return this.update("inspect", key, (record, now) => inspectTransition(record, now, key));
  }

  async forceRelease(key: string, fencingId: number): Promise<ForceReleaseOutcome> {
    assertValidKey(key);
    assertFencingId(fencingId);
    const call = { fencingId, ttlMs: this.ttlMs };
    return this.update("forceRelease", key, (record, now) =>
      forceReleaseTransition(record, now, call),
    );
  }

  /** Frees the client if the lock made it; a given one stays open. */
  close(): Promise<void> {
    return this.client.close((client) => this.io.end(client));
  }

  private readonly retrying: Retrying = (attempt) =>
    withRetry(this.retry, isGoogleTransient, attempt);

  private update<A>(operation: string, key: string, decide: Decide<A>): Promise<A> {
    return this.run(operation, key, (client) => this.io.update(client, key, decide));
  }

  /** One call: the whole read-decide-write is retried on transient errors, re-reading the clock. */
  private run<A>(operation: string, key: string, attempt: (client: C) => Promise<A>): Promise<A> {
    return callStore(this.io.backend, operation, key, async () => {
      const client = await this.client.get();
      return withRetry(this.retry, isGoogleTransient, () => attempt(client));
    });
  }
}
