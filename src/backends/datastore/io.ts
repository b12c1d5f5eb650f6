// How DatastoreLock reads and writes records: key names, entities, lookups, inserts and
// transactions. What to write is the transition table's (core/transitions.ts) to decide.

import type { ClaimOutcome, TransactionCompletion } from "../../core/port.js";
import {
  type Decide,
  type LockRecord,
  purgeTransition,
  unlessLapsed,
} from "../../core/transitions.js";
import { conditionalWrite, GRPC } from "../google/grpc.js";
import {
  isSpreadId,
  type RecordIdLayout,
  type RecordIds,
  spreadPrefix,
} from "../google/record-ids.js";
import type { RecordIo, Retrying } from "../google/record-io.js";
import type { LeaseClock, Stamp, StoreTime } from "../google/store-clock.js";
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

/**
 * How DatastoreLock reads and writes records; the transition table decides what. Time is the
 * store's, as bounds (google/store-clock.ts): the driver surfaces no lookup's read time, so a
 * call decides at the earliest the store's time can be (a lease is never taken over early),
 * and a win is judged lapsed by the latest; the bounds are learned from the commit time of
 * every write (before the first, of one empty transaction).
 */
export class DatastoreIo implements RecordIo<DatastoreLike, DatastoreTransactionLike> {
  readonly backend = "datastore";
  readonly purgeBatchSize = PURGE_BATCH;
  /** The properties written unindexed: all but `expiresAt`, and it too when asked. */
  private readonly unindexed: string[];

  constructor(
    private readonly kind: string,
    private readonly namespace: string | undefined,
    private readonly driver: () => Promise<DatastoreModule>,
    private readonly clock: LeaseClock,
    private readonly ids: RecordIds,
    indexExpiresAt = true,
  ) {
    this.unindexed = indexExpiresAt ? UNINDEXED : [...UNINDEXED, "expiresAt"];
  }

  async claim(
    datastore: DatastoreLike,
    key: string,
    decide: Decide<ClaimOutcome>,
  ): Promise<ClaimOutcome> {
    const keys = this.entityKeys(datastore, key);
    // Fast paths without a transaction: a strongly consistent lookup answers held / done (and
    // a retry's own landed win) in one RPC; an absent key is taken with an insert, which the
    // store refuses with ALREADY_EXISTS if someone else created it first. Only a reclaim
    // (lapsed lease or ttl, or a record to move from its plain id) needs the transaction.
    for (let race = 0; race < 3; race++) {
      await this.time(datastore);
      const { record } = await this.lookup(datastore, (k) => datastore.get(k), keys);
      const now = this.bounds();
      const { answer, write } = decide(record, now.earliest);
      if (write === undefined) return unlessLapsed(answer, now.latest);
      if (record !== undefined) break;
      const entry = this.entry(keys.home, key, write);
      const sent = this.clock.stamp();
      let response: unknown;
      const inserted = await conditionalWrite([GRPC.ALREADY_EXISTS], async () => {
        response = await datastore.insert(entry);
      });
      if (inserted) return unlessLapsed(answer, this.committed(response, sent).latest);
    }
    const { result, at } = await this.transact(datastore, key, decide);
    return unlessLapsed(result, at.latest);
  }

  /** One transaction: look the record up, let `decide` choose, commit its write or roll back. */
  async update<A>(datastore: DatastoreLike, key: string, decide: Decide<A>): Promise<A> {
    return (await this.transact(datastore, key, decide)).result;
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
    const keys = this.entityKeys(datastore, key);
    return retrying(async () => {
      const { result } = await this.inTransaction(datastore, async (tx) => {
        const value = await body(tx);
        const found = await this.lookup(datastore, (k) => tx.get(k), keys);
        const now = this.bounds();
        const { row, answer, write } = decide(found.record, now.earliest);
        const commit = row === "complete.claimed";
        if (commit && write !== undefined) this.save(tx, keys, found, key, write);
        return { result: { completed: answer, value }, commit };
      });
      return result;
    });
  }

  async purgeBatch(datastore: DatastoreLike, retrying: Retrying): Promise<PurgeBatch> {
    const { PropertyFilter } = await this.driver();
    const before = await this.time(datastore);
    // Without a namespace of ours, the client's own default applies, as it does for keys.
    const namespace = this.namespace ?? datastore.namespace;
    const base =
      namespace === undefined
        ? datastore.createQuery(this.kind)
        : datastore.createQuery(namespace, this.kind);
    const query = base
      .filter(new PropertyFilter("expiresAt", "<=", new Date(before.earliest)) as never)
      .select("__key__")
      .limit(PURGE_BATCH);
    const [rows] = (await datastore.runQuery(query as never)) as [Record<symbol, unknown>[]];
    if (rows.length === 0) return { found: 0, deleted: 0 };
    const keys = rows.map((row) => row[datastore.KEY]);
    const deleted = await retrying(async () => {
      const { result } = await this.inTransaction(datastore, async (tx) => {
        const [entities] = (await tx.get(keys as never)) as [StoredEntity[]];
        const { earliest } = this.bounds();
        const stale = entities.filter(
          (entity) => purgeTransition(fromStored(entity), earliest).write === "delete",
        );
        for (const entity of stale) tx.delete(entity[datastore.KEY] as never);
        return { result: stale.length, commit: stale.length > 0 };
      });
      return result;
    });
    return { found: rows.length, deleted };
  }

  async end(datastore: DatastoreLike): Promise<void> {
    // The Datastore class has no close() of its own: its gRPC clients, made on demand, do.
    const owned = datastore as OwnedDatastore;
    const stubs = [...(owned.clients_?.values() ?? [])];
    owned.clients_?.clear();
    await Promise.all(stubs.map((stub) => stub.close?.()));
  }

  /** Read, decide and commit in one transaction; `at`: the commit's time, or the decision's. */
  private async transact<A>(
    datastore: DatastoreLike,
    key: string,
    decide: Decide<A>,
  ): Promise<{ result: A; at: StoreTime }> {
    const keys = this.entityKeys(datastore, key);
    return this.inTransaction(datastore, async (tx) => {
      const found = await this.lookup(datastore, (k) => tx.get(k), keys);
      const now = this.bounds();
      const { answer, write } = decide(found.record, now.earliest);
      if (write !== undefined) this.save(tx, keys, found, key, write);
      return { result: answer, commit: write !== undefined };
    });
  }

  /**
   * Run `body` in one transaction and end it: commit its writes, or roll back a read-only one
   * (or its locks linger until they time out). A failure before the commit rolls back too.
   * Resolves to the body's result and the store's time: the commit's, or the bounds after a
   * rollback.
   */
  private async inTransaction<T>(
    datastore: DatastoreLike,
    body: (tx: DatastoreTransactionLike) => Promise<{ result: T; commit: boolean }>,
  ): Promise<{ result: T; at: StoreTime }> {
    await this.time(datastore);
    const tx = datastore.transaction();
    let ending = false;
    try {
      // An explicit begin: the driver's lazy begin-with-lookup left the emulator holding a
      // second transaction's lock (commit then hit "Transaction lock timeout").
      await tx.run();
      const { result, commit } = await body(tx);
      ending = true;
      if (!commit) {
        await tx.rollback();
        return { result, at: this.bounds() };
      }
      const sent = this.clock.stamp();
      return { result, at: this.committed(await tx.commit(), sent) };
    } catch (error) {
      // A failed commit has ended the transaction already; otherwise free its locks.
      if (!ending) await tx.rollback().catch(() => {});
      throw error;
    }
  }

  /**
   * The store's time now. Before anything was learned, one empty transaction asks it: its
   * commit time (2 RPCs, once per lock; every write's commit time keeps the bounds fresh).
   */
  private async time(datastore: DatastoreLike): Promise<StoreTime> {
    const known = this.clock.now();
    if (known !== undefined) return known;
    const tx = datastore.transaction();
    await tx.run();
    // A commit's time is no earlier than the store's when its request left: stamp it here.
    const sent = this.clock.stamp();
    return this.committed(await tx.commit(), sent);
  }

  /** Learn a commit's time (its request sent at `sent`); the bounds now. */
  private committed(response: unknown, sent: Stamp): StoreTime {
    this.clock.learn(commitTime(response), sent, "write");
    return this.bounds();
  }

  /** The bounds on the store's time now; known once `time()` has run. */
  private bounds(): StoreTime {
    const now = this.clock.now();
    if (now === undefined) {
      throw new Error("the store answered a commit without its time (CommitResponse.commitTime)");
    }
    return now;
  }

  /** The entity keys of `key`'s record: its home, and its plain name while migrating. */
  private entityKeys(datastore: DatastoreLike, key: string): EntityKeys {
    // key({ path }) ignores the client's default namespace; apply it ourselves.
    const namespace = this.namespace ?? datastore.namespace;
    const entityKey = (name: string) =>
      datastore.key({ ...(namespace === undefined ? {} : { namespace }), path: [this.kind, name] });
    const home = this.ids.home(key);
    const legacy = this.ids.legacy(key);
    return {
      home: entityKey(home),
      homeName: home,
      legacy: legacy === undefined ? undefined : entityKey(legacy),
    };
  }

  /**
   * The record of `keys`, looked up with `get` (the client's, or a transaction's): the one at
   * its home, else (migrating) the one at its plain name, with that entity key to delete when
   * the record is written. Both names go in one lookup: one RPC either way.
   */
  private async lookup(
    datastore: DatastoreLike,
    get: (keys: never) => Promise<unknown>,
    keys: EntityKeys,
  ): Promise<Found> {
    if (keys.legacy === undefined) {
      const [entity] = (await get(keys.home as never)) as [StoredEntity | undefined];
      return { record: fromStored(entity), legacy: undefined };
    }
    const [entities] = (await get([keys.home, keys.legacy] as never)) as [StoredEntity[]];
    let legacy: StoredEntity | undefined;
    for (const entity of entities ?? []) {
      const name = (entity[datastore.KEY] as { name?: unknown } | undefined)?.name;
      if (name === keys.homeName) return { record: fromStored(entity), legacy: undefined };
      legacy = entity;
    }
    if (legacy === undefined) return { record: undefined, legacy: undefined };
    return { record: fromStored(legacy), legacy: keys.legacy };
  }

  /** Save `record` at its home in `tx`; one found at its plain name moves there (deleted). */
  private save(
    tx: DatastoreTransactionLike,
    keys: EntityKeys,
    found: Found,
    key: string,
    record: LockRecord,
  ): void {
    if (found.legacy !== undefined) tx.delete(found.legacy as never);
    tx.save(this.entry(keys.home, key, record));
  }

  /** An entity to insert or save: the record of `key`, stored under `entityKey`. */
  private entry(entityKey: unknown, key: string, record: LockRecord) {
    return {
      key: entityKey,
      data: { ...toStored(key, record) },
      excludeFromIndexes: this.unindexed,
    };
  }
}

/**
 * The store's time in a commit's answer (`[CommitResponse]`): its `commitTime`, or, where a
 * non-transactional commit leaves that unset, the first mutation's `updateTime`.
 */
function commitTime(response: unknown): unknown {
  const [first] = Array.isArray(response) ? response : [response];
  const answer = first as
    | { commitTime?: unknown; mutationResults?: { updateTime?: unknown }[] }
    | null
    | undefined;
  return answer?.commitTime ?? answer?.mutationResults?.[0]?.updateTime;
}

/** What `close()` reaches of a client it created: the per-API gRPC clients, by name. */
interface OwnedDatastore {
  clients_?: Map<string, { close?(): Promise<void> }>;
}

/** The entity keys of a record: its home, and its plain name while migrating. */
interface EntityKeys {
  readonly home: unknown;
  readonly homeName: string;
  readonly legacy: unknown;
}

/** A record looked up: none, at its home, or at its plain name (`legacy`, to delete on a write). */
interface Found {
  readonly record: LockRecord | undefined;
  readonly legacy: unknown;
}

/** An entity as a lookup returns it: the stored fields, and its key under `datastore.KEY`. */
type StoredEntity = Record<string | symbol, unknown>;

/**
 * Key name of a record under `recordIds` (default `"spread"`, as the lock's): spread, the
 * key's 4-hex-digit hash and `~` before the key (`3f0a~orders:42`); plain (0.1's), `k` before
 * it. Either prefix makes every name legal (never `__…__`, never empty), keeps it reversible,
 * and tells the two apart (`k` is not a hex digit); 5 + 1,024 bytes is within the 1,500-byte
 * limit.
 *
 * @example
 * ```ts
 * import { encodeName } from "gcp-pubsub-idempotency/datastore";
 *
 * // Find the entity of a key in the console: kind IdempotencyRecord.
 * encodeName("orders:42"); // "<4 hex digits>~orders:42"
 * encodeName("orders:42", "plain"); // "korders:42"
 * ```
 */
export function encodeName(key: string, recordIds: RecordIdLayout = "spread"): string {
  return recordIds === "plain" ? `k${key}` : spreadPrefix(key) + key;
}

/**
 * The idempotency key of a record's key name, spread or plain: the inverse of
 * {@link encodeName}.
 *
 * @example
 * ```ts
 * import { decodeName } from "gcp-pubsub-idempotency/datastore";
 *
 * decodeName("korders:42"); // "orders:42"
 * ```
 */
export function decodeName(name: string): string {
  return isSpreadId(name) ? name.slice(5) : name.slice(1);
}
