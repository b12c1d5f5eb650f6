// What each Google store supplies to the record engine (records.ts): how it reads and writes
// one record, nothing of the state machine.

import type { ClaimOutcome, TransactionCompletion } from "../../core/port.js";
import type { Decide } from "../../core/transitions.js";
import type { PurgeBatch } from "../shared/purge.js";

/** Run `attempt` again on transient errors, within the lock's retry policy. */
export type Retrying = <T>(attempt: () => Promise<T>) => Promise<T>;

/** The I/O of one Google store: how it reads and writes a record, nothing of the table. */
export interface RecordIo<C, Tx> {
  /** The backend a BackendError names: `datastore`, `firestore` or `spanner`. */
  readonly backend: string;
  /** Records per purge batch. */
  readonly purgeBatchSize: number;
  /**
   * Claim `key` as `decide` says, by the store's fastest safe path (falling back to `update`),
   * and answer a win whose lease had run out by its write's time in the store `held` instead.
   */
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
