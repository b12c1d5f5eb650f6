// The parts of @google-cloud/spanner that SpannerLock uses, as structural types: the package
// never imports the driver unless it creates the client itself.

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
  commit(): Promise<
    readonly [
      (
        | {
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
        | undefined
      ),
      ...unknown[],
    ]
  >;
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
  /** Close the database's sessions (when the lock created it). */
  close?(): Promise<unknown>;
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
}
