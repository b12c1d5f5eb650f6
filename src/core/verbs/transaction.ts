// lockInTransaction(): DONE committed in the same store transaction as the body's own writes,
// so a crash, a thrown body or a fenced-out zombie lands neither. The claim is lock()'s own;
// the cycle (engine/cycle.ts) runs the body inside completeInTransaction.
import type { Claim, TransactionalLockBackend } from "../port.js";
import type { FingerprintOption, LockOptions, StepsOption } from "../types.js";
import { runVerb, type VerbBody } from "./run-verb.js";

/**
 * Options of {@link lockInTransaction}: those of {@link LockOptions}, with a backend that
 * offers transactions (SqlLock, DatastoreLock, FirestoreLock, SpannerLock, or your own
 * {@link TransactionalLockBackend}).
 *
 * @example
 * ```ts
 * import Database from "better-sqlite3";
 * import type { TransactionalLockOptions } from "gcp-pubsub-idempotency";
 * import { SqlLock } from "gcp-pubsub-idempotency/sql";
 *
 * const options: TransactionalLockOptions<Database.Database> = {
 *   backend: new SqlLock({ client: new Database("app.db") }),
 *   leaseMs: 60_000,
 * };
 * ```
 */
export interface TransactionalLockOptions<Tx> extends LockOptions, FingerprintOption, StepsOption {
  /** A backend with `completeInTransaction`; any other is refused before any I/O. */
  backend: TransactionalLockBackend<Tx>;
}

/**
 * The body of {@link lockInTransaction}: the store's transaction handle, the claim, and a
 * signal aborted when a heartbeat finds the key taken over. Write through `tx` only, and let
 * any error of a statement propagate: a body that swallows one may leave the transaction
 * broken or ended.
 *
 * @example
 * ```ts
 * import type pg from "pg";
 * import type { TransactionalBody } from "gcp-pubsub-idempotency";
 *
 * const insertOrder: TransactionalBody<pg.PoolClient, void> = async (tx, claim) => {
 *   await tx.query("INSERT INTO orders (message_id) VALUES ($1)", [claim.key]);
 * };
 * ```
 */
export type TransactionalBody<Tx, T> = (
  tx: Tx,
  claim: Claim,
  signal: AbortSignal,
) => T | Promise<T>;

/**
 * Run `body` at most once per `key`, and commit its writes in the same store transaction as
 * the key's DONE: both land, or neither does. Claim as {@link lock} does (a short commit of
 * its own, so contention shows at once); then open a transaction, call `body(tx, claim,
 * signal)`, and in that transaction complete the claim only while its fence still matches.
 *
 * - A duplicate rejects with {@link Duplicate}, a held key with {@link InProgress}, as lock();
 *   neither opens a transaction.
 * - The body throws: rolled back, the claim released, the error propagates (nack).
 * - The commit fails (lost connection, serialization failure, a constraint the body broke):
 *   nothing landed; the claim is released and the call rejects with a `BackendError` (nack).
 *   Unlike lock(), a redelivery here repeats nothing.
 * - Fenced out (the lease lapsed and another delivery reclaimed the key): rolled back, logged
 *   with `alert: true`, and resolved with the body's value, as lock() resolves a fenced-out
 *   run; none of the body's writes landed, and the reclaimer's run is the one that counts.
 *
 * Rejects with {@link InvalidKey} or {@link InvalidConfiguration} before any I/O, the latter
 * also for a backend without transactions (RedisLock, InMemoryLock). Firestore and Datastore
 * may run the body more than once, as they do any transaction function: keep it free of
 * effects outside `tx`.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import { Duplicate, lockInTransaction } from "gcp-pubsub-idempotency";
 * import { SqlLock } from "gcp-pubsub-idempotency/sql";
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const backend = new SqlLock({ client: pool, table: "app.idempotency_records" });
 * await lockInTransaction("orders:4711", { backend }, async (tx) => {
 *   // A plain insert: no unique constraint needed, no Idempotency-Key at the sink.
 *   await tx.query("INSERT INTO app.orders (po, total) VALUES ($1, $2)", ["4711", 99]);
 * }).catch((error) => {
 *   if (!(error instanceof Duplicate)) throw error;
 * });
 * ```
 */
export function lockInTransaction<Tx, T>(
  key: string,
  options: TransactionalLockOptions<Tx>,
  body: TransactionalBody<Tx, T>,
): Promise<T> {
  return runVerb(
    "transaction",
    "lockInTransaction()",
    key,
    options,
    body,
    IN_TRANSACTION as VerbBody<TransactionalBody<Tx, T>, T>,
  );
}

/** The body gets the transaction first: (tx, claim, signal). */
const IN_TRANSACTION: VerbBody<TransactionalBody<unknown, unknown>, unknown> = {
  signalAt: 2,
  adapt: (body) => (claim, signal, tx) => body(tx, claim, signal),
};
