// How FirestoreLock reads and writes records: document ids, reads, creates and updates under
// a last-update-time precondition. What to write is the transition table's to decide.
import { InvalidConfiguration } from "../../core/errors.js";
import type { ClaimOutcome, TransactionCompletion } from "../../core/port.js";
import {
  type Decide,
  type LockRecord,
  purgeTransition,
  unlessLapsed,
} from "../../core/transitions.js";
import { conditionalWrite, GRPC, grpcCode } from "../google/grpc.js";
import {
  isSpreadId,
  type RecordIdLayout,
  type RecordIds,
  spreadPrefix,
} from "../google/record-ids.js";
import type { RecordIo, Retrying } from "../google/record-io.js";
import type { LeaseClock, Stamp, StoreTime } from "../google/store-clock.js";
import { changedFields, fromStored, toStored } from "../google/stored-record.js";
import type { PurgeBatch } from "../shared/purge.js";
import type {
  FirestoreDocumentLike,
  FirestoreLike,
  FirestoreSnapshotLike,
  FirestoreTransactionLike,
} from "./client.js";
import { LastWrites } from "./last-writes.js";

/** A write refused because the document changed (or went) since it was read. */
const CHANGED = [GRPC.FAILED_PRECONDITION, GRPC.NOT_FOUND];

/** Reads and writes per call before giving up on a key that keeps changing under us. */
const MAX_RACES = 20;
const PURGE_BATCH = 300;

/**
 * How FirestoreLock reads and writes records, without transactions: an absent key is taken
 * with `create()` (refused if the document exists), every other write is an `update` under a
 * last-update-time precondition; a refused write re-reads and decides again. Time is the
 * store's: a record is judged at its read's time, a win at its write's; only the one-write
 * claim of an absent key starts its lease at bounds learned earlier (google/store-clock.ts).
 */
export class FirestoreIo implements RecordIo<FirestoreLike, FirestoreTransactionLike> {
  readonly backend = "firestore";
  readonly purgeBatchSize = PURGE_BATCH;

  /** What this process last wrote per key: a holder's next write needs no read before it. */
  private readonly lastWrites = new LastWrites();

  constructor(
    private readonly collection: string,
    private readonly clock: LeaseClock,
    private readonly ids: RecordIds,
  ) {}

  async claim(
    firestore: FirestoreLike,
    key: string,
    decide: Decide<ClaimOutcome>,
  ): Promise<ClaimOutcome> {
    const ref = this.document(firestore, key);
    // Most keys are first deliveries: try the one-write path first, once a commit has bounded
    // the store's time (before that, the read of the path below tells it). Not while
    // migrating: a record at the key's plain id must be read first.
    const now = this.clock.now();
    if (now !== undefined && this.ids.legacy(key) === undefined) {
      const { answer, write } = decide(undefined, now.earliest);
      const sent = this.clock.stamp();
      const created = write === undefined ? undefined : await create(ref, toStored(key, write));
      if (created !== undefined && write !== undefined) {
        this.lastWrites.remember(key, write, writeTimeOf(created));
        return unlessLapsed(answer, this.writeTime(created, sent).latest);
      }
    }
    const { answer, at } = await this.transact(firestore, key, decide);
    return unlessLapsed(answer, at.latest);
  }

  async update<A>(firestore: FirestoreLike, key: string, decide: Decide<A>): Promise<A> {
    const quick = await this.updateAsLastWritten(firestore, key, decide);
    if (quick !== undefined) return quick.answer;
    return (await this.transact(firestore, key, decide)).answer;
  }

  /**
   * One write, no read, when this process wrote the key last: decide on that record (at the
   * earliest bound of the store's time) and write under its update time, which Firestore
   * refuses if anything wrote since. Only a decision that writes is taken this way: an answer
   * without a write must come from a read. Undefined: read and decide.
   */
  private async updateAsLastWritten<A>(
    firestore: FirestoreLike,
    key: string,
    decide: Decide<A>,
  ): Promise<{ answer: A } | undefined> {
    const last = this.lastWrites.take(key);
    const now = this.clock.now();
    if (last === undefined || now === undefined) return undefined;
    const { answer, write } = decide(last.record, now.earliest);
    if (write === undefined) return undefined;
    const sent = this.clock.stamp();
    const ref = this.document(firestore, key);
    const result = await updated(ref, updateOf(key, last.record, write), last.updateTime);
    if (result === undefined) return undefined;
    this.writeTime(result, sent);
    this.lastWrites.remember(key, write, writeTimeOf(result));
    return { answer };
  }

  /**
   * `runTransaction`: the body, then the record read (outside the transaction, so a long
   * body holds no lock on it and claims still answer at once) and, when the fence matches,
   * updated to DONE in the transaction under the read's last-update-time precondition. A
   * reclaim (or any write) since the read fails the commit: nothing lands, and the next
   * attempt reads the record again and re-checks the fence. Fenced out, or done already by
   * an earlier attempt whose commit landed, the transaction is rolled back.
   */
  async completeInTransaction<T>(
    firestore: FirestoreLike,
    key: string,
    body: (tx: FirestoreTransactionLike) => Promise<T>,
    decide: Decide<boolean>,
  ): Promise<TransactionCompletion<T>> {
    if (typeof firestore.runTransaction !== "function") {
      throw new InvalidConfiguration(
        "lockInTransaction needs a Firestore with runTransaction() (@google-cloud/firestore or firebase-admin)",
      );
    }
    for (let race = 0; race < MAX_RACES; race++) {
      // The record's update time the DONE write was conditioned on, in the last attempt.
      let readAt: { time: unknown; ref: FirestoreDocumentLike } | undefined;
      try {
        return await firestore.runTransaction(async (tx) => {
          readAt = undefined;
          const value = await body(tx);
          // A record still at its plain id (migrating) is completed where it is.
          const { ref, snapshot, now } = await this.read(firestore, key);
          const record = snapshot.exists ? fromStored(snapshot.data()) : undefined;
          const { row, answer, write } = decide(record, now.earliest);
          // Fenced out, or already done at this fence: none of this run's writes may land.
          if (row !== "complete.claimed" || write === undefined) {
            throw new RolledBack({ completed: answer, value });
          }
          readAt = { time: snapshot.updateTime, ref };
          tx.update(
            ref as never,
            updateOf(key, record, write) as never,
            {
              lastUpdateTime: snapshot.updateTime,
            } as never,
          );
          return { completed: true, value };
        });
      } catch (error) {
        if (error instanceof RolledBack) return error.outcome;
        if (readAt === undefined || !(CHANGED as readonly unknown[]).includes(grpcCode(error)))
          throw error;
        // Refused: by our precondition (the record moved: decide again), or by one of the
        // body's own writes (the record is as read: the failure is the body's).
        const now = await readAt.ref.get();
        if (now.exists && sameTime(now.updateTime, readAt.time)) throw error;
      }
    }
    throw new Error(`the record kept changing during ${MAX_RACES} attempts`);
  }

  async purgeBatch(firestore: FirestoreLike, retrying: Retrying): Promise<PurgeBatch> {
    // The filter only narrows the query (this process's clock until the store's is known);
    // each record found is judged at the query's read time.
    const query = firestore
      .collection(this.collection)
      .where("expiresAt", "<=" as never, new Date(this.clock.now()?.earliest ?? Date.now()))
      .limit(PURGE_BATCH);
    const sent = this.clock.stamp();
    const snapshot = await retrying(() => query.get());
    const { earliest } = this.readTime(snapshot, sent);
    const deletions = await Promise.all(
      snapshot.docs.map(async (doc) => {
        if (purgeTransition(fromStored(doc.data()), earliest).write !== "delete") return false;
        // A record reclaimed since the query has a newer update time: the delete is refused.
        return conditionalWrite(CHANGED, () =>
          doc.ref.delete({ lastUpdateTime: doc.updateTime } as never),
        );
      }),
    );
    return { found: snapshot.docs.length, deleted: deletions.filter(Boolean).length };
  }

  async end(firestore: FirestoreLike): Promise<void> {
    await firestore.terminate?.();
  }

  /**
   * Read the record, let `decide` choose at the read's time, write under the read's update
   * time (or create it): resolves to the answer and the store's time after the write (or the
   * read). A write refused because the record moved reads and decides again.
   */
  private async transact<A>(
    firestore: FirestoreLike,
    key: string,
    decide: Decide<A>,
  ): Promise<{ answer: A; at: StoreTime }> {
    for (let race = 0; race < MAX_RACES; race++) {
      const { ref, home, snapshot, now } = await this.read(firestore, key);
      // Absent, or deleted meanwhile (TTL or purge): a claim starts a new record (its first fence).
      const record = snapshot.exists ? fromStored(snapshot.data()) : undefined;
      const { answer, write } = decide(record, now.earliest);
      if (write === undefined) return { answer, at: now };
      const sent = this.clock.stamp();
      // A record at its plain id (migrating) moves home: created there whole, then deleted
      // where it was, unless it changed since (reads take the home record first meanwhile).
      const moving = record !== undefined && ref !== home;
      const written =
        record === undefined || moving
          ? await create(home, toStored(key, write))
          : await updated(ref, updateOf(key, record, write), snapshot.updateTime);
      if (written !== undefined) {
        if (moving) {
          await conditionalWrite(CHANGED, () =>
            ref.delete({ lastUpdateTime: snapshot.updateTime } as never),
          );
        }
        this.lastWrites.remember(key, write, writeTimeOf(written));
        return { answer, at: this.writeTime(written, sent) };
      }
    }
    throw new Error(`the record kept changing during ${MAX_RACES} attempts`);
  }

  /**
   * The record of `key` as read now: the document at its home id, or, when that is absent
   * and the lock is migrating, the one at its plain id (a second read); the store's time as
   * of the read that answered.
   */
  private async read(
    firestore: FirestoreLike,
    key: string,
  ): Promise<{
    ref: FirestoreDocumentLike;
    home: FirestoreDocumentLike;
    snapshot: FirestoreSnapshotLike;
    now: StoreTime;
  }> {
    const home = this.document(firestore, key);
    const sent = this.clock.stamp();
    const snapshot = await home.get();
    const legacy = this.ids.legacy(key);
    if (snapshot.exists || legacy === undefined) {
      return { ref: home, home, snapshot, now: this.readTime(snapshot, sent) };
    }
    this.readTime(snapshot, sent);
    const plainRef = firestore.collection(this.collection).doc(legacy);
    const plainSent = this.clock.stamp();
    const plain = await plainRef.get();
    // Neither exists: a new record goes home.
    const ref = plain.exists ? plainRef : home;
    return {
      ref,
      home,
      snapshot: plain.exists ? plain : snapshot,
      now: this.readTime(plain, plainSent),
    };
  }

  /** The store's time after a read (`readTime`), its request sent at `sent`. */
  private readTime(snapshot: { readonly readTime?: unknown }, sent: Stamp): StoreTime {
    return known(this.clock.learn(snapshot.readTime, sent, "read"));
  }

  /** The store's time after a write (its `WriteResult.writeTime`), sent at `sent`. */
  private writeTime(result: unknown, sent: Stamp): StoreTime {
    return known(this.clock.learn(writeTimeOf(result), sent, "write"));
  }

  private document(firestore: FirestoreLike, key: string): FirestoreDocumentLike {
    return firestore.collection(this.collection).doc(this.ids.home(key));
  }
}

/** A WriteResult's time: the document's update time after the write. */
function writeTimeOf(result: unknown): unknown {
  return (result as { writeTime?: unknown } | null | undefined)?.writeTime;
}

/** Bounds that must be known: the store answered with its time, or did before. */
function known(time: StoreTime | undefined): StoreTime {
  if (time === undefined) throw new Error("the store answered without its time (readTime)");
  return time;
}

/** Ends an attempt that must not commit; `runTransaction` rolls back and rejects with it. */
class RolledBack<T> extends Error {
  constructor(readonly outcome: TransactionCompletion<T>) {
    super("rolled back: the fence is stale, or an earlier attempt committed");
  }
}

/** Two update times (Firestore Timestamps) are the same instant. */
function sameTime(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const isEqual = (a as { isEqual?: unknown } | null | undefined)?.isEqual;
  return typeof isEqual === "function" && isEqual.call(a, b) === true;
}

/**
 * The fields of an `update` from `previous` to `next`: an update keeps the fields it is not
 * given, so a fingerprint or result `next` drops is written as `null` (read back as none); one
 * that is unchanged is left out. A driver's `FieldValue.delete()` would need the very copy of
 * the driver the given instance comes from (firebase-admin bundles its own).
 */
function updateOf(key: string, previous: LockRecord | undefined, next: LockRecord): object {
  const { fingerprint, result, ...fields } = toStored(key, next);
  return { ...fields, ...changedFields(previous, next) };
}

/** Create the document of an absent key: its WriteResult, or undefined when it exists. */
function create(ref: FirestoreDocumentLike, data: object): Promise<unknown> {
  return written([GRPC.ALREADY_EXISTS], () => ref.create(data as never));
}

/** Update under the read's update time: its WriteResult, or undefined when the record moved. */
function updated(ref: FirestoreDocumentLike, data: object, lastUpdateTime: unknown) {
  return written(CHANGED, () => ref.update(data as never, { lastUpdateTime } as never));
}

/** A conditional write's result ({} when it has none), or undefined when it was refused. */
async function written(refusals: readonly number[], write: () => Promise<unknown>) {
  let result: unknown;
  const landed = await conditionalWrite(refusals, async () => {
    result = (await write()) ?? {};
  });
  return landed ? result : undefined;
}

/**
 * Document id of a key under `recordIds` (default `"spread"`, as the lock's): base64url of its
 * UTF-8 bytes, after the key's 4-hex-digit hash and `~` (spread) or after `k` (plain, 0.1's).
 * Never contains `/`, is never `.`, `..` or `__…__`, is reversible (the two prefixes differ:
 * `k` is not a hex digit), and 1,024 key bytes give at most 1,371 id bytes (limit 1,500).
 *
 * @example
 * ```ts
 * import { encodeDocumentId } from "gcp-pubsub-idempotency/firestore";
 *
 * // Find the document of a key in the console.
 * encodeDocumentId("orders/42"); // "<4 hex digits>~b3JkZXJzLzQy"
 * encodeDocumentId("orders/42", "plain"); // "kb3JkZXJzLzQy"
 * ```
 */
export function encodeDocumentId(key: string, recordIds: RecordIdLayout = "spread"): string {
  const encoded = Buffer.from(key, "utf8").toString("base64url");
  return recordIds === "plain" ? `k${encoded}` : spreadPrefix(key) + encoded;
}

/**
 * The idempotency key of a record's document id, spread or plain: the inverse of
 * {@link encodeDocumentId}.
 *
 * @example
 * ```ts
 * import { decodeDocumentId } from "gcp-pubsub-idempotency/firestore";
 *
 * decodeDocumentId("kb3JkZXJzLzQy"); // "orders/42"
 * ```
 */
export function decodeDocumentId(id: string): string {
  return Buffer.from(id.slice(isSpreadId(id) ? 5 : 1), "base64url").toString("utf8");
}
