// How DatastoreLock reads and writes records: key names, entities, lookups, inserts and
// transactions. What to write is the transition table's (core/transitions.ts) to decide.

import type { ClaimOutcome, TransactionCompletion } from "../../core/port.js";
import { type Decide, type LockRecord, purgeTransition } from "../../core/transitions.js";
import { conditionalWrite, GRPC } from "../google/grpc.js";
import type { RecordIo, Retrying } from "../google/record-io.js";
import { fromStored, toStored } from "../google/stored-record.js";
import type { PurgeBatch } from "../shared/purge.js";
import type { DatastoreLike, DatastoreModule, DatastoreTransactionLike } from "./client.js";

/**
 * Only `expiresAt` is ever queried (by `purgeExpired`, and a TTL policy needs no index).
 * Every indexed property costs index writes on each claim; excluding the rest roughly halves
 * the write cost, and keeps the up-to-1,024-byte `key` out of the 1,500-byte index limit. The
 * result must be unindexed: Datastore refuses an indexed string over 1,500 bytes, and an
 * unindexed one may be 1,048,487 (within the 1 MiB entity). A record without a fingerprint or
 * a result has no such property: a name listed here that the entity lacks is ignored.
 */
const UNINDEXED = ["key", "state", "fencingId", "leaseExpiresAt", "token", "fingerprint", "result"];

/** Entities per purge transaction: the Datastore limit on mutations per commit is 500. */
const PURGE_BATCH = 500;

/** How DatastoreLock reads and writes records; the transition table decides what. */
export class DatastoreIo implements RecordIo<DatastoreLike, DatastoreTransactionLike> {
  readonly backend = "datastore";
  readonly purgeBatchSize = PURGE_BATCH;

  constructor(
    private readonly kind: string,
    private readonly namespace: string | undefined,
    private readonly driver: () => Promise<DatastoreModule>,
  ) {}

  async claim(
    datastore: DatastoreLike,
    key: string,
    decide: Decide<ClaimOutcome>,
  ): Promise<ClaimOutcome> {
    const entityKey = this.entityKey(datastore, key);
    // Fast paths without a transaction: a strongly consistent lookup answers held / done (and
    // a retry's own landed win) in one RPC; an absent key is taken with an insert, which the
    // store refuses with ALREADY_EXISTS if someone else created it first. Only a reclaim
    // (lapsed lease or ttl) needs the transaction.
    for (let race = 0; race < 3; race++) {
      const [entity] = (await datastore.get(entityKey as never)) as [StoredEntity | undefined];
      const record = fromStored(entity);
      const { answer, write } = decide(record, Date.now());
      if (write === undefined) return answer;
      if (record !== undefined) break;
      const entry = this.entry(entityKey, key, write);
      if (await conditionalWrite([GRPC.ALREADY_EXISTS], () => datastore.insert(entry))) {
        return answer;
      }
    }
    return this.update(datastore, key, decide);
  }

  /** One transaction: look the record up, let `decide` choose, commit its write or roll back. */
  update<A>(datastore: DatastoreLike, key: string, decide: Decide<A>): Promise<A> {
    const entityKey = this.entityKey(datastore, key);
    return inTransaction(datastore, async (tx) => {
      const [entity] = (await tx.get(entityKey as never)) as [StoredEntity | undefined];
      const { answer, write } = decide(fromStored(entity), Date.now());
      if (write !== undefined) tx.save(this.entry(entityKey, key, write));
      return { result: answer, commit: write !== undefined };
    });
  }

  /**
   * One transaction: the body's lookups and mutations, then the record looked up last (so it
   * is locked only for the commit) and completed when the fence matches. A transient failure
   * runs it all again; a retry that finds the record done at this fence knows an earlier
   * commit landed (its response was lost), and rolls back rather than write twice.
   */
  completeInTransaction<T>(
    datastore: DatastoreLike,
    key: string,
    body: (tx: DatastoreTransactionLike) => Promise<T>,
    decide: Decide<boolean>,
    retrying: Retrying,
  ): Promise<TransactionCompletion<T>> {
    const entityKey = this.entityKey(datastore, key);
    return retrying(() =>
      inTransaction(datastore, async (tx) => {
        const value = await body(tx);
        const [entity] = (await tx.get(entityKey as never)) as [StoredEntity | undefined];
        const { row, answer, write } = decide(fromStored(entity), Date.now());
        const commit = row === "complete.claimed";
        if (commit && write !== undefined) tx.save(this.entry(entityKey, key, write));
        return { result: { completed: answer, value }, commit };
      }),
    );
  }

  async purgeBatch(datastore: DatastoreLike, retrying: Retrying): Promise<PurgeBatch> {
    const { PropertyFilter } = await this.driver();
    // Without a namespace of ours, the client's own default applies, as it does for keys.
    const namespace = this.namespace ?? datastore.namespace;
    const base =
      namespace === undefined
        ? datastore.createQuery(this.kind)
        : datastore.createQuery(namespace, this.kind);
    const query = base
      .filter(new PropertyFilter("expiresAt", "<=", new Date()) as never)
      .select("__key__")
      .limit(PURGE_BATCH);
    const [rows] = (await datastore.runQuery(query as never)) as [Record<symbol, unknown>[]];
    if (rows.length === 0) return { found: 0, deleted: 0 };
    const keys = rows.map((row) => row[datastore.KEY]);
    const deleted = await retrying(() =>
      inTransaction(datastore, async (tx) => {
        const [entities] = (await tx.get(keys as never)) as [StoredEntity[]];
        const stale = entities.filter(
          (entity) => purgeTransition(fromStored(entity), Date.now()).write === "delete",
        );
        for (const entity of stale) tx.delete(entity[datastore.KEY] as never);
        return { result: stale.length, commit: stale.length > 0 };
      }),
    );
    return { found: rows.length, deleted };
  }

  async end(datastore: DatastoreLike): Promise<void> {
    // The Datastore class has no close() of its own: its gRPC clients, made on demand, do.
    const owned = datastore as OwnedDatastore;
    const stubs = [...(owned.clients_?.values() ?? [])];
    owned.clients_?.clear();
    await Promise.all(stubs.map((stub) => stub.close?.()));
  }

  private entityKey(datastore: DatastoreLike, key: string): unknown {
    // key({ path }) ignores the client's default namespace; apply it ourselves.
    const namespace = this.namespace ?? datastore.namespace;
    return datastore.key({
      ...(namespace === undefined ? {} : { namespace }),
      path: [this.kind, encodeName(key)],
    });
  }

  /** An entity to insert or save: the record of `key`, stored under `entityKey`. */
  private entry(entityKey: unknown, key: string, record: LockRecord) {
    return { key: entityKey, data: { ...toStored(key, record) }, excludeFromIndexes: UNINDEXED };
  }
}

/**
 * Run `body` in one transaction and end it: commit its writes, or roll back a read-only one
 * (or its locks linger until they time out). A failure before the commit rolls back too.
 */
async function inTransaction<T>(
  datastore: DatastoreLike,
  body: (tx: DatastoreTransactionLike) => Promise<{ result: T; commit: boolean }>,
): Promise<T> {
  const tx = datastore.transaction();
  let ending = false;
  try {
    // An explicit begin: the driver's lazy begin-with-lookup left the emulator holding a
    // second transaction's lock (commit then hit "Transaction lock timeout").
    await tx.run();
    const { result, commit } = await body(tx);
    ending = true;
    if (commit) await tx.commit();
    else await tx.rollback();
    return result;
  } catch (error) {
    // A failed commit has ended the transaction already; otherwise free its locks.
    if (!ending) await tx.rollback().catch(() => {});
    throw error;
  }
}

/** What `close()` reaches of a client it created: the per-API gRPC clients, by name. */
interface OwnedDatastore {
  clients_?: Map<string, { close?(): Promise<void> }>;
}

/** An entity as a lookup returns it: the stored fields, and its key under `datastore.KEY`. */
type StoredEntity = Record<string | symbol, unknown>;

/**
 * Key name of a record: a fixed prefix makes every name legal (never `__…__`, never empty)
 * and stays reversible; 1 + 1,024 bytes is within the 1,500-byte limit.
 *
 * @example
 * ```ts
 * import { encodeName } from "gcp-pubsub-idempotency/datastore";
 *
 * // Find the entity of a key in the console: kind IdempotencyRecord, name "korders:42".
 * encodeName("orders:42"); // "korders:42"
 * ```
 */
export function encodeName(key: string): string {
  return `k${key}`;
}

/**
 * The idempotency key of a record's key name: the inverse of {@link encodeName}.
 *
 * @example
 * ```ts
 * import { decodeName } from "gcp-pubsub-idempotency/datastore";
 *
 * decodeName("korders:42"); // "orders:42"
 * ```
 */
export function decodeName(name: string): string {
  return name.slice(1);
}
