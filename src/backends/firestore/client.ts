// The parts of @google-cloud/firestore (or firebase-admin) that FirestoreLock uses, as
// structural types: the package never imports the driver unless it creates the instance itself.

/**
 * The parts of a Firestore `DocumentSnapshot` this backend reads.
 *
 * @example
 * ```ts
 * import { Firestore } from "@google-cloud/firestore";
 * import { encodeDocumentId, type FirestoreSnapshotLike } from "gcp-pubsub-idempotency/firestore";
 *
 * const doc = new Firestore().collection("idempotency-records").doc(encodeDocumentId("orders:42"));
 * const snapshot: FirestoreSnapshotLike = await doc.get();
 * console.log(snapshot.exists, snapshot.data()?.state);
 * ```
 */
export interface FirestoreSnapshotLike {
  /** False when there is no record for the key. */
  readonly exists: boolean;
  /** The last update time, used as the precondition of the next write. */
  readonly updateTime?: unknown;
  /** The store's time at the read: leases are judged by it. */
  readonly readTime?: unknown;
  /** The document it was read from. */
  readonly ref: FirestoreDocumentLike;
  /** The stored record's fields. */
  data(): Record<string, unknown> | undefined;
}

/**
 * The parts of a Firestore `DocumentReference` this backend uses.
 *
 * @example
 * ```ts
 * import { Firestore } from "@google-cloud/firestore";
 * import { encodeDocumentId, type FirestoreDocumentLike } from "gcp-pubsub-idempotency/firestore";
 *
 * const doc: FirestoreDocumentLike = new Firestore()
 *   .collection("idempotency-records")
 *   .doc(encodeDocumentId("orders:42"));
 * ```
 */
export interface FirestoreDocumentLike {
  /** Read the record. */
  get(): Promise<FirestoreSnapshotLike>;
  /** Claim an absent key: fails with ALREADY_EXISTS when the document exists. Its `writeTime` is read. */
  create(data: never): Promise<unknown>;
  /** Write under a `lastUpdateTime` precondition: fails when someone wrote meanwhile. Its `writeTime` is read. */
  update(data: never, precondition: never): Promise<unknown>;
  /** Delete under a `lastUpdateTime` precondition (`purgeExpired`). */
  delete(precondition: never): Promise<unknown>;
}

/**
 * The parts of a Firestore `Query` this backend uses (`purgeExpired` only).
 *
 * @example
 * ```ts
 * import { Firestore } from "@google-cloud/firestore";
 * import type { FirestoreQueryLike } from "gcp-pubsub-idempotency/firestore";
 *
 * const expired: FirestoreQueryLike = new Firestore()
 *   .collection("idempotency-records")
 *   .where("expiresAt", "<=", new Date());
 * ```
 */
export interface FirestoreQueryLike {
  /** Cap the results per batch. */
  limit(n: number): FirestoreQueryLike;
  /** Run the query. */
  get(): Promise<{
    /** The matching documents. */
    readonly docs: readonly FirestoreSnapshotLike[];
    /** The store's time at the read: expiries are judged by it. */
    readonly readTime?: unknown;
  }>;
}

/**
 * The parts of a Firestore `CollectionReference` this backend uses.
 *
 * @example
 * ```ts
 * import { Firestore } from "@google-cloud/firestore";
 * import type { FirestoreCollectionLike } from "gcp-pubsub-idempotency/firestore";
 *
 * const records: FirestoreCollectionLike = new Firestore().collection("idempotency-records");
 * ```
 */
export interface FirestoreCollectionLike {
  /** The document of one record, by its encoded id. */
  doc(id: string): FirestoreDocumentLike;
  /** A filtered query (`purgeExpired`: `expiresAt <= now`). */
  where(field: string, op: never, value: unknown): FirestoreQueryLike;
}

/**
 * The parts of a Firestore `Transaction` this backend uses: the update that completes the
 * record in the body's transaction, under a last-update-time precondition.
 *
 * @example
 * ```ts
 * import { Firestore } from "@google-cloud/firestore";
 * import type { FirestoreTransactionLike } from "gcp-pubsub-idempotency/firestore";
 *
 * await new Firestore().runTransaction(async (transaction) => {
 *   const tx: FirestoreTransactionLike = transaction;
 *   void tx;
 * });
 * ```
 */
export interface FirestoreTransactionLike {
  /** Queue an update for the commit; with a precondition the commit fails if it does not hold. */
  update(document: never, data: never, precondition: never): unknown;
}

/**
 * The parts of a Firestore instance this backend uses: `@google-cloud/firestore`'s
 * `Firestore`, or firebase-admin's `getFirestore()` (the same class).
 *
 * @example
 * ```ts
 * import { Firestore } from "@google-cloud/firestore";
 * import { FirestoreLock, type FirestoreLike } from "gcp-pubsub-idempotency/firestore";
 *
 * const firestore: FirestoreLike = new Firestore({ projectId: "my-project" });
 * const backend = new FirestoreLock({ firestore });
 * ```
 */
export interface FirestoreLike {
  /** The collection of the records. */
  collection(path: string): FirestoreCollectionLike;
  /** Called by `FirestoreLock.close()` only for an instance the lock created itself. */
  terminate?(): Promise<void>;
  /** For `lockInTransaction`: run a function in a transaction, retried on contention. */
  runTransaction?<T>(
    update: (transaction: FirestoreTransactionLike) => Promise<T>,
    options?: {
      /** Attempts in all; the driver's default is 5. */
      maxAttempts?: number;
    },
  ): Promise<T>;
}

/** The driver module, as FirestoreLock imports it on first use. */
export interface FirestoreModule {
  Firestore: new (settings: Readonly<Record<string, string | number>>) => unknown;
}
