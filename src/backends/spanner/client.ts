// The parts of @google-cloud/spanner that SpannerLock uses, as structural types: the package
// never imports the driver unless it creates the client itself.

/**
 * A commit's answer, as far as the lock reads it: a claim is judged at its commit timestamp.
 *
 * @example
 * ```ts
 * import type { SpannerCommitResponseLike } from "gcp-pubsub-idempotency/spanner";
 *
 * const response: SpannerCommitResponseLike = { commitTimestamp: { seconds: 1_796_600_000, nanos: 0 } };
 * ```
 */
export interface SpannerCommitResponseLike {
  /** The commit timestamp, in Spanner's clock (a protobuf Timestamp). */
  commitTimestamp?:
    | {
        /** Whole seconds since the epoch (a number, string or Long). */
        seconds?: unknown;
        /** Nanoseconds within the second. */
        nanos?: unknown;
      }
    | null
    | undefined;
}

/**
 * The parts of a `@google-cloud/spanner` read-write `Transaction` this backend uses.
 *
 * @example
 * ```ts
 * import { Spanner } from "@google-cloud/spanner";
 * import type { SpannerTransactionLike } from "gcp-pubsub-idempotency/spanner";
 *
 * const database = new Spanner().instance("main").database("orders");
 * const [tx]: [SpannerTransactionLike] = await database.getTransaction();
 * ```
 */
export interface SpannerTransactionLike {
  /** Run a query in the transaction (the first one begins it inline). */
  run(query: {
    /** The GoogleSQL text. */
    sql: string;
    /** Named parameters (`@key`). */
    params: Record<string, unknown>;
    /** Rows as plain objects, INT64 as numbers. */
    json: true;
  }): Promise<readonly [unknown[], ...unknown[]]>;
  /** Queue an insert-or-update for the commit. */
  upsert(table: string, row: object): void;
  /** Queue deletes by primary key for the commit. */
  deleteRows(table: string, keys: string[]): void;
  /** Commit; rejects with ABORTED when a concurrent transaction won. */
  commit(): Promise<readonly [SpannerCommitResponseLike | undefined, ...unknown[]]>;
  /** End the transaction without writing, freeing its locks. */
  rollback(): Promise<unknown>;
  /** Give the session back (after a commit or rollback this is a no-op). */
  end(): void;
}

/**
 * The parts of a `@google-cloud/spanner` `Database` this backend uses. Structural, so the
 * package never imports the driver unless it creates the client itself.
 *
 * @example
 * ```ts
 * import { Spanner, type Transaction } from "@google-cloud/spanner";
 * import { SpannerLock, type SpannerDatabaseLike } from "gcp-pubsub-idempotency/spanner";
 *
 * const database: SpannerDatabaseLike<Transaction> = new Spanner().instance("main").database("orders");
 * const backend = new SpannerLock({ database });
 * ```
 */
export interface SpannerDatabaseLike<Tx extends SpannerTransactionLike = SpannerTransactionLike> {
  /** A read-write transaction, begun inline by its first query. */
  getTransaction(): Promise<[Tx]>;
  /** Apply DDL (`ensureSchema()`); resolves to the long-running operation first. */
  updateSchema?(statements: string[]): Promise<
    readonly [
      {
        /** Resolves when the schema change is done. */
        promise(): Promise<unknown>;
      },
      ...unknown[],
    ]
  >;
  /**
   * A strong single-use read-only query: a duplicate's or a held key's only call. Without it,
   * every claim reads in a read-write transaction.
   */
  run?(query: {
    sql: string;
    params: Record<string, unknown>;
    json: true;
  }): Promise<readonly [unknown[], ...unknown[]]>;
  /**
   * Mutations committed in one call, in a transaction of their own: an absent key's claim.
   * Without it (or without the module's `MutationSet`), the claim runs a transaction.
   */
  writeAtLeastOnce?(
    mutations: SpannerMutationSetLike,
  ): Promise<readonly [SpannerCommitResponseLike, ...unknown[]]>;
  /** Close the database's sessions (when the lock created it). */
  close?(): Promise<unknown>;
}

/**
 * A `MutationSet` of `@google-cloud/spanner`, as far as the lock fills one: an absent key's
 * claim is one insert committed alone (`Database.writeAtLeastOnce`).
 *
 * @example
 * ```ts
 * import { MutationSet } from "@google-cloud/spanner";
 * import type { SpannerMutationSetLike } from "gcp-pubsub-idempotency/spanner";
 *
 * const mutations: SpannerMutationSetLike = new MutationSet();
 * mutations.insert("orders", { id: "order-1", total: 99 });
 * ```
 */
export interface SpannerMutationSetLike {
  /** Queue an insert of `row` into `table`: refused with ALREADY_EXISTS if its key is taken. */
  insert(table: string, row: object): void;
}

/** The module `@google-cloud/spanner`, as far as the lock creates its own client. */
export interface SpannerModule {
  /** The client class. */
  Spanner: new (
    settings: Readonly<Record<string, string>>,
  ) => {
    instance(id: string): { database(id: string): SpannerDatabaseLike };
    close(): unknown;
  };
  /** Mutations for `writeAtLeastOnce`. */
  MutationSet?: new () => SpannerMutationSetLike;
}
