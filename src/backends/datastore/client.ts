// The parts of @google-cloud/datastore that DatastoreLock uses, as structural types: the
// package never imports the driver unless it creates the client itself.

/**
 * The parts of a `@google-cloud/datastore` transaction this backend uses.
 *
 * @example
 * ```ts
 * import { Datastore } from "@google-cloud/datastore";
 * import type { DatastoreTransactionLike } from "gcp-pubsub-idempotency/datastore";
 *
 * const tx: DatastoreTransactionLike = new Datastore().transaction();
 * ```
 */
export interface DatastoreTransactionLike {
  /** Begin the transaction (explicitly, before the first lookup). */
  run(): Promise<unknown>;
  /** Look entities up inside the transaction. */
  get(key: never): Promise<unknown[]>;
  /** Queue an upsert for the commit. */
  save(entity: {
    key: unknown;
    data: Record<string, unknown>;
    excludeFromIndexes?: string[];
  }): void;
  /** Queue a delete for the commit (`purgeExpired`). */
  delete(key: never): void;
  /** Commit; rejects with ABORTED when a concurrent transaction won. */
  commit(): Promise<unknown>;
  /** End the transaction without writing, freeing its locks. */
  rollback(): Promise<unknown>;
}

/**
 * The parts of a `@google-cloud/datastore` `Datastore` instance this backend uses.
 * Structural, so the package never imports the driver unless it creates the client itself.
 *
 * @example
 * ```ts
 * import { Datastore } from "@google-cloud/datastore";
 * import { DatastoreLock, type DatastoreLike } from "gcp-pubsub-idempotency/datastore";
 *
 * const datastore: DatastoreLike = new Datastore({ projectId: "my-project", namespace: "orders" });
 * const backend = new DatastoreLock({ datastore });
 * ```
 */
export interface DatastoreLike {
  /** Build the key of a record: `[kind, encodeName(key, recordIds)]` in the namespace. */
  key(options: { namespace?: string; path: string[] }): unknown;
  /** Its default namespace, if it was created with one. */
  readonly namespace?: string | undefined;
  /** A strongly consistent lookup outside any transaction. */
  get(key: never): Promise<unknown[]>;
  /** A non-transactional insert: fails with ALREADY_EXISTS when the entity exists. */
  insert(entity: {
    key: unknown;
    data: Record<string, unknown>;
    excludeFromIndexes?: string[];
  }): Promise<unknown>;
  /** A new transaction, for reclaims, `complete`, `release`, `renew` and purges. */
  transaction(): DatastoreTransactionLike;
  /** A query on the kind (`purgeExpired` only). */
  createQuery(namespaceOrKind: string, kind?: string): DatastoreQueryLike;
  /** Run a query (`purgeExpired` only). */
  runQuery(query: never): Promise<unknown[]>;
  /** The symbol under which a returned entity carries its key. */
  readonly KEY: symbol;
}

/**
 * The parts of a `@google-cloud/datastore` `Query` this backend uses (`purgeExpired` only).
 *
 * @example
 * ```ts
 * import { Datastore } from "@google-cloud/datastore";
 * import type { DatastoreQueryLike } from "gcp-pubsub-idempotency/datastore";
 *
 * const query: DatastoreQueryLike = new Datastore().createQuery("IdempotencyRecord").limit(10);
 * ```
 */
export interface DatastoreQueryLike {
  /** Add a property filter (`expiresAt <= now`). */
  filter(filter: never): DatastoreQueryLike;
  /** Project to some fields (`__key__`: a keys-only query). */
  select(fields: string): DatastoreQueryLike;
  /** Cap the results per batch. */
  limit(n: number): DatastoreQueryLike;
}

/** The driver module, as DatastoreLock imports it on first use. */
export interface DatastoreModule {
  Datastore: new (settings: Readonly<Record<string, string | number>>) => unknown;
  PropertyFilter: new (property: string, operator: string, value: unknown) => unknown;
}
