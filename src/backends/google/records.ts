// The record engine of DatastoreLock, FirestoreLock and SpannerLock: the transition table
// applied to one store's records through its RecordIo. The one layer between a lock and its
// store I/O; the lock checks the arguments, so nothing here checks them again.

import type {
  Claim,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  PurgeOptions,
  TransactionalLockBackend,
  TransactionCompletion,
} from "../../core/port.js";
import { withRetry } from "../../core/retry.js";
import {
  claimTransition,
  clockFence,
  completeTransition,
  type Decide,
  forceReleaseTransition,
  inspectTransition,
  releaseTransition,
  renewTransition,
} from "../../core/transitions.js";
import { purgeInBatches } from "../shared/purge.js";
import { callStore, callStoreWithBody } from "../shared/store-call.js";
import { isGoogleTransient } from "./grpc.js";
import type { GoogleLockSetup } from "./options.js";
import type { RecordIo, Retrying } from "./record-io.js";
import { newToken } from "./stored-record.js";

/**
 * The calls of a Google lock: the transition table (core/transitions.ts) applied in the
 * store's time as the io knows it (Spanner's and Firestore's as read; Datastore's as the
 * earliest it can be, bounded from its commit times), each call retried on transient errors
 * and its failures wrapped by `callStore`. The store supplies only its {@link RecordIo}.
 */
export class GoogleRecords<C, Tx> {
  private readonly retrying: Retrying;

  constructor(
    private readonly io: RecordIo<C, Tx>,
    private readonly setup: GoogleLockSetup<C, string>,
  ) {
    this.retrying = (attempt) => withRetry(setup.retry, isGoogleTransient, attempt);
  }

  /** The port methods, for the lock to offer as its trusted port. */
  port(): TransactionalLockBackend<Tx> {
    return {
      claim: (key, leaseMs, options) => this.claim(key, leaseMs, options?.fingerprint),
      complete: (claim, result) => this.complete(claim, result),
      release: (claim) => this.release(claim),
      renew: (claim, leaseMs) => this.renew(claim, leaseMs),
      completeInTransaction: (claim, body) => this.completeInTransaction(claim, body),
    };
  }

  /** A claim; `fingerprint` (checked by the caller) is stored with the record it wins. */
  async claim(key: string, leaseMs: number, fingerprint?: string): Promise<ClaimOutcome> {
    // One token per call, shared by its retries: a retry that finds it knows its write landed.
    const call = { key, leaseMs, ttlMs: this.setup.ttlMs, token: newToken(), fingerprint };
    // The io judges the lapse of a win, in the store's time.
    return this.run("claim", key, (client) =>
      this.io.claim(client, key, (record, now) =>
        claimTransition(record, now, call, clockFence(now)),
      ),
    );
  }

  /** A complete; `result` (checked by the caller) lands with DONE, in the same write. */
  complete(claim: Claim, result?: string): Promise<boolean> {
    const call = { claim, ttlMs: this.setup.ttlMs, result };
    return this.update("complete", claim.key, (record, now) =>
      completeTransition(record, now, call),
    );
  }

  async release(claim: Claim): Promise<void> {
    const call = { claim, ttlMs: this.setup.ttlMs };
    await this.update("release", claim.key, (record, now) => releaseTransition(record, now, call));
  }

  renew(claim: Claim, leaseMs: number): Promise<boolean> {
    const call = { claim, leaseMs, ttlMs: this.setup.ttlMs };
    return this.update("renew", claim.key, (record, now) => renewTransition(record, now, call));
  }

  /** The complete in the store transaction of `body`'s writes; the body's error as thrown. */
  completeInTransaction<T>(
    claim: Claim,
    body: (tx: Tx) => Promise<T>,
  ): Promise<TransactionCompletion<T>> {
    const call = { claim, ttlMs: this.setup.ttlMs };
    const decide: Decide<boolean> = (record, now) => completeTransition(record, now, call);
    return callStoreWithBody(
      this.io.backend,
      "completeInTransaction",
      claim.key,
      body,
      async (watched) => {
        const client = await this.setup.client.get();
        return this.io.completeInTransaction(client, claim.key, watched, decide, this.retrying);
      },
    );
  }

  /** Batches until one comes back short; each batch (not the whole purge) is retried. */
  purgeExpired(options?: PurgeOptions): Promise<number> {
    return callStore(this.io.backend, "purgeExpired", undefined, async () => {
      const client = await this.setup.client.get();
      return purgeInBatches(
        this.io.purgeBatchSize,
        () => this.io.purgeBatch(client, this.retrying),
        options?.onProgress,
      );
    });
  }

  // Operator calls (the CLI's inspect and release): the same read-decide-write as every call.

  inspect(key: string): Promise<InspectedRecord | undefined> {
    return this.update("inspect", key, (record, now) => inspectTransition(record, now, key));
  }

  forceRelease(key: string, fencingId: number): Promise<ForceReleaseOutcome> {
    const call = { fencingId, ttlMs: this.setup.ttlMs };
    return this.update("forceRelease", key, (record, now) =>
      forceReleaseTransition(record, now, call),
    );
  }

  /** Frees the client if the lock made it; a given one stays open. */
  close(): Promise<void> {
    return this.setup.client.close((client) => this.io.end(client));
  }

  private update<A>(operation: string, key: string, decide: Decide<A>): Promise<A> {
    return this.run(operation, key, (client) => this.io.update(client, key, decide));
  }

  /** One call: the whole read-decide-write is retried on transient errors, re-reading the clock. */
  private run<A>(operation: string, key: string, attempt: (client: C) => Promise<A>): Promise<A> {
    return callStore(this.io.backend, operation, key, async () => {
      const client = await this.setup.client.get();
      return this.retrying(() => attempt(client));
    });
  }
}
