// The LockBackend calls DatastoreLock, FirestoreLock and SpannerLock share: each one handed to
// the lock's record engine (google-records.ts). The engine sits in a module-private WeakMap,
// not in a field, so its type never reaches the locks' public declarations.
import type {
  Claim,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  LockBackend,
  PurgeOptions,
  TransactionalLockBackend,
  TransactionCompletion,
} from "../../core/types.js";
import type { GoogleLockSetup } from "./options.js";
import { GoogleRecords, type RecordIo } from "./records.js";

/** The engine of each lock, its client and transaction types erased (the lock keeps them). */
const engines = new WeakMap<GoogleStoreLock<unknown>, GoogleRecords<unknown, unknown>>();

/** Give `lock` its engine: the store's `io` over the client and policies of `setup`. */
export function attachRecords<C, Tx>(
  lock: GoogleStoreLock<unknown>,
  io: RecordIo<C, Tx>,
  setup: GoogleLockSetup<C, string>,
): void {
  const records = new GoogleRecords(io, setup.client, setup.ttlMs, setup.retry);
  engines.set(lock, records as GoogleRecords<unknown, unknown>);
}

function recordsOf(lock: GoogleStoreLock<unknown>): GoogleRecords<unknown, unknown> {
  const records = engines.get(lock);
  if (records === undefined) throw new TypeError("a Google lock used before attachRecords()");
  return records;
}

/**
 * A lock on a Google store (Datastore, Firestore, Spanner): the calls of {@link LockBackend},
 * each run by the store's record engine. Each subclass reads its own options and documents
 * `completeInTransaction` for its store.
 */
export abstract class GoogleStoreLock<Tx> implements TransactionalLockBackend<Tx> {
  claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    return recordsOf(this).claim(key, leaseMs);
  }

  complete(claim: Claim): Promise<boolean> {
    return recordsOf(this).complete(claim);
  }

  release(claim: Claim): Promise<void> {
    return recordsOf(this).release(claim);
  }

  renew(claim: Claim, leaseMs: number): Promise<boolean> {
    return recordsOf(this).renew(claim, leaseMs);
  }

  completeInTransaction<T>(
    claim: Claim,
    body: (tx: Tx) => Promise<T>,
  ): Promise<TransactionCompletion<T>> {
    return recordsOf(this).completeInTransaction(claim, body as (tx: unknown) => Promise<T>);
  }

  /**
   * Delete the records past their expiry at once, for what the store's TTL policy (or
   * Spanner's row deletion policy) has not reaped yet. A record is judged again as it is
   * deleted, so one reclaimed since the query is left alone.
   */
  purgeExpired(options?: PurgeOptions): Promise<number> {
    return recordsOf(this).purgeExpired(options);
  }

  /**
   * Closes the client if the lock made it (its gRPC channels); a given one stays open. A
   * later call makes a new one.
   */
  close(): Promise<void> {
    return recordsOf(this).close();
  }

  // Operator calls (the CLI's inspect and release), in the time the lock goes by.

  /**
   * The record of `key` as stored, and the time the lock goes by (Spanner's, or this
   * process's for Datastore and Firestore); see {@link LockBackend.inspect}.
   */
  inspect(key: string): Promise<InspectedRecord | undefined> {
    return recordsOf(this).inspect(key);
  }

  /** Free a stuck claim seen at `fencingId`; see {@link LockBackend.forceRelease}. */
  forceRelease(key: string, fencingId: number): Promise<ForceReleaseOutcome> {
    return recordsOf(this).forceRelease(key, fencingId);
  }
}
