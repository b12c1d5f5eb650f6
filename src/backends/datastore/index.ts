/**
 * `DatastoreLock`, for Firestore in Datastore mode (@google-cloud/datastore).
 *
 * @module gcp-pubsub-idempotency/datastore
 */
import { DEFAULT_TTL_MS } from "../../core/constants.js";
import { BackendError, InvalidConfiguration } from "../../core/errors.js";
import type { Claim, ClaimOutcome, LockBackend } from "../../core/types.js";
import {
  assertPositiveMs,
  assertValidKey,
  readOptions,
  stringOption,
  ttlOption,
} from "../../core/validate.js";
import { unlessLapsed } from "../shared/lease.js";
import { clientOption, googleProjectOptions, nameOption } from "../shared/options.js";
import {
  newToken,
  type ResolvedRetry,
  type RetryOptions,
  resolveRetry,
  withRetry,
} from "../shared/retry.js";

export type { RetryOptions } from "../shared/retry.js";

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
  /** Build the key of a record: `[kind, encodeName(key)]` in the namespace. */
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

/**
 * Options of {@link DatastoreLock}; all optional. The constructor checks each one before any
 * I/O and throws {@link InvalidConfiguration} naming the option for a value of the wrong
 * type or out of range; unknown option names are ignored.
 *
 * @example
 * ```ts
 * import { DatastoreLock, type DatastoreLockOptions } from "gcp-pubsub-idempotency/datastore";
 *
 * const options: DatastoreLockOptions = {
 *   projectId: "my-project",
 *   namespace: "orders-svc",
 *   ttlMs: 24 * 60 * 60_000,
 * };
 * const backend = new DatastoreLock(options);
 * ```
 */
export interface DatastoreLockOptions {
  /**
   * A Datastore client to use (an object with `key()`, `get()`, `insert()` and
   * `transaction()`); default: one created on first use (ADC / DATASTORE_EMULATOR_HOST),
   * which `close()` closes. A given client stays yours.
   */
  datastore?: DatastoreLike;
  /** For the client created on first use: a project id (printable ASCII, no spaces). */
  projectId?: string;
  /** For the client created on first use: a named database; default `(default)`. */
  databaseId?: string;
  /**
   * Namespace of the records: 1 to 100 of `[0-9A-Za-z._-]`, not of the form `__name__`
   * (reserved). Default: the client's own namespace, or the default namespace for a client
   * without one. An empty string is refused rather than read as either: omit the option.
   */
  namespace?: string;
  /** Kind of the records; default `IdempotencyRecord`. */
  kind?: string;
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to `MAX_TTL_MS` (10 years);
   * default {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number;
  /** Bounds on retrying ABORTED / UNAVAILABLE / lock timeouts. */
  retry?: RetryOptions;
}

/** The stored record. `expiresAt` is a timestamp so a TTL policy on it can reap the entity. */
interface StoredRecord {
  key: string;
  state: "claimed" | "done";
  fencingId: number;
  leaseExpiresAt: number;
  expiresAt: Date;
  token: string;
}

/**
 * Only `expiresAt` is ever queried (by `purgeExpired`, and a TTL policy needs no index).
 * Every indexed property costs index writes on each claim; excluding the rest roughly halves
 * the write cost, and keeps the up-to-1,024-byte `key` out of the 1,500-byte index limit.
 */
const UNINDEXED = ["key", "state", "fencingId", "leaseExpiresAt", "token"];

/** A kind name: not `__…__` (reserved); non-empty, at most 1,500 bytes (checked apart). */
const KIND_PATTERN = /^(?!__.*__$)/s;
/** A namespace: 1 to 100 of `[0-9A-Za-z._-]`, not `__…__` (reserved). */
const NAMESPACE_PATTERN = /^(?!__.*__$)[0-9A-Za-z._-]{1,100}$/;

const ALREADY_EXISTS = 6;

function codeOf(error: unknown): unknown {
  return error !== null && typeof error === "object"
    ? (error as { code?: unknown }).code
    : undefined;
}

/** Entities per purge transaction: the Datastore limit on mutations per commit is 500. */
const PURGE_BATCH = 500;

/**
 * Firestore in Datastore mode (or legacy Datastore) as the store. `claim` answers held / done
 * with one strongly consistent lookup, takes an absent key with a lookup and an insert
 * (refused with ALREADY_EXISTS if another claim created it first), and reclaims a lapsed
 * record in a transaction (begin, lookup, commit). `complete`, `release` and `renew` are one
 * transaction each.
 *
 * Time is this process's clock (`Date.now()`): a Datastore transaction cannot read a server
 * clock. Skew between instances of up to a few seconds is absorbed by the lease (minutes by
 * default); keep the hosts NTP-synced (Cloud Run and GCE are).
 *
 * Records are deleted only after `expiresAt`: configure a TTL policy on the `expiresAt`
 * property of the kind, or call `purgeExpired()` periodically.
 *
 * The constructor does no I/O. Store failures reject with a {@link BackendError} once the
 * transient ones have been retried (see {@link RetryOptions}).
 *
 * @example
 * ```ts
 * import { lock } from "gcp-pubsub-idempotency";
 * import { DatastoreLock } from "gcp-pubsub-idempotency/datastore";
 *
 * // The client is created on first use: ADC, or DATASTORE_EMULATOR_HOST.
 * const backend = new DatastoreLock({ namespace: "orders-svc" }); // kind "IdempotencyRecord"
 * await lock("orders:4711", { backend }, async () => {});
 * ```
 */
export class DatastoreLock implements LockBackend {
  /** Kind of the records. */
  readonly kind: string;
  /** Namespace of the records as given; undefined means the client's default namespace. */
  readonly namespace: string | undefined;
  /** How long a DONE key suppresses duplicates, in ms. */
  readonly ttlMs: number;
  private readonly projectId: string | undefined;
  private readonly databaseId: string | undefined;
  private readonly retry: ResolvedRetry;
  private client: Promise<DatastoreLike> | undefined;
  /** True while `client` is one this lock created (and so `close()` closes). */
  private ownsClient = false;
  private driver: Promise<DatastoreModule> | undefined;

  /**
   * Checks every option before any I/O (see {@link DatastoreLockOptions}): a value of the
   * wrong type or out of range throws {@link InvalidConfiguration} naming the option.
   */
  constructor(options: DatastoreLockOptions = {}) {
    const read = readOptions("DatastoreLock", options, true, [
      "datastore",
      "projectId",
      "databaseId",
      "namespace",
      "kind",
      "ttlMs",
      "retry",
    ]);
    const datastore = clientOption<DatastoreLike>(
      "datastore",
      read.datastore,
      ["key", "get", "insert", "transaction"],
      "a @google-cloud/datastore Datastore",
    );
    ({ projectId: this.projectId, databaseId: this.databaseId } = googleProjectOptions(read));
    this.namespace = stringOption(
      "namespace",
      read.namespace,
      NAMESPACE_PATTERN,
      "1 to 100 of [0-9A-Za-z._-], not of the form __name__ (omit it for the client's own " +
        "namespace; an empty string is not taken to mean the default)",
    );
    this.kind =
      nameOption(
        "kind",
        read.kind,
        1500,
        KIND_PATTERN,
        "a non-empty name of at most 1,500 UTF-8 bytes, not of the form __name__",
      ) ?? "IdempotencyRecord";
    this.ttlMs = ttlOption(read.ttlMs, DEFAULT_TTL_MS);
    this.retry = resolveRetry(read.retry);
    if (datastore !== undefined) this.client = Promise.resolve(datastore);
  }

  async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    // One token per call, shared by its retries: a retry that finds it knows its commit landed.
    const token = newToken();
    const decide = (record: StoredRecord | undefined, now: number) =>
      this.decideClaim(key, leaseMs, token, record, now);
    try {
      const datastore = await this.datastore();
      const entityKey = this.entityKey(datastore, key);
      // Fast paths without a transaction: a strongly consistent lookup answers held / done
      // (and a retry's own landed win) in one RPC; an absent key is taken with an insert,
      // which the store refuses with ALREADY_EXISTS if someone else created it first. Only a
      // reclaim (lapsed lease or ttl) needs the transaction.
      const fast = await withRetry(this.retry, async () => {
        for (let race = 0; race < 3; race++) {
          const [entity] = (await datastore.get(entityKey as never)) as [StoredEntity | undefined];
          const record = entity === undefined ? undefined : toRecord(entity);
          const { result, write } = decide(record, Date.now());
          if (write === undefined) return result;
          if (record !== undefined) return undefined; // a reclaim: take the transaction
          try {
            await datastore.insert({
              key: entityKey,
              data: { ...write },
              excludeFromIndexes: UNINDEXED,
            });
            return result;
          } catch (error) {
            if (codeOf(error) !== ALREADY_EXISTS) throw error;
          }
        }
        return undefined;
      });
      if (fast !== undefined) return unlessLapsed(fast, Date.now());
    } catch (error) {
      if (error instanceof BackendError || error instanceof InvalidConfiguration) throw error;
      throw new BackendError("datastore", "claim", key, error);
    }
    return unlessLapsed(await this.transact<ClaimOutcome>("claim", key, decide), Date.now());
  }

  private decideClaim(
    key: string,
    leaseMs: number,
    token: string,
    record: StoredRecord | undefined,
    now: number,
  ): { result: ClaimOutcome; write?: StoredRecord } {
    if (record !== undefined) {
      if (record.token === token && record.state === "claimed") {
        const claim = { key, fencingId: record.fencingId, leaseExpiresAt: record.leaseExpiresAt };
        return { result: { status: "won", claim } };
      }
      if (record.state === "done") {
        if (now < record.expiresAt.getTime()) return { result: { status: "done" } };
      } else if (now < record.leaseExpiresAt) {
        return { result: { status: "held", leaseExpiresAt: record.leaseExpiresAt } };
      }
    }
    // Absent, or a lapsed lease or ttl: the fence rises while the record exists.
    const fencingId = record === undefined ? 1 : record.fencingId + 1;
    const leaseExpiresAt = now + leaseMs;
    return {
      result: { status: "won", claim: { key, fencingId, leaseExpiresAt } },
      write: {
        key,
        state: "claimed",
        fencingId,
        leaseExpiresAt,
        expiresAt: new Date(leaseExpiresAt + this.ttlMs),
        token,
      },
    };
  }

  private entityKey(datastore: DatastoreLike, key: string): unknown {
    // key({ path }) ignores the client's default namespace; apply it ourselves.
    const namespace = this.namespace ?? datastore.namespace;
    return datastore.key({
      ...(namespace === undefined ? {} : { namespace }),
      path: [this.kind, encodeName(key)],
    });
  }

  async complete(claim: Claim): Promise<boolean> {
    assertValidKey(claim.key);
    return this.transact("complete", claim.key, (record, now) => {
      if (!this.isCurrent(record, claim, now)) return { result: false };
      // A retried complete (its first commit landed) finds it done and still says true.
      if (record.state === "done") return { result: true };
      return {
        result: true,
        write: { ...record, state: "done", expiresAt: new Date(now + this.ttlMs) },
      };
    });
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    await this.transact("release", claim.key, (record, now) => {
      if (!this.isCurrent(record, claim, now) || record.state !== "claimed") {
        return { result: undefined };
      }
      return {
        result: undefined,
        write: {
          ...record,
          fencingId: record.fencingId + 1,
          leaseExpiresAt: now,
          expiresAt: new Date(now + this.ttlMs),
        },
      };
    });
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    return this.transact("renew", claim.key, (record, now) => {
      if (!this.isCurrent(record, claim, now) || record.state !== "claimed") {
        return { result: false };
      }
      const leaseExpiresAt = now + leaseMs;
      return {
        result: true,
        write: { ...record, leaseExpiresAt, expiresAt: new Date(leaseExpiresAt + this.ttlMs) },
      };
    });
  }

  /**
   * Delete records past `expiresAt`, for stores without a TTL policy. Each batch is re-read
   * in a transaction, so a record reclaimed since the query is left alone.
   */
  async purgeExpired(): Promise<number> {
    try {
      const datastore = await this.datastore();
      const { PropertyFilter } = await this.loadDriver();
      let removed = 0;
      for (;;) {
        const now = Date.now();
        // Without a namespace of ours, the client's own default applies, as it does for keys.
        const namespace = this.namespace ?? datastore.namespace;
        const base =
          namespace === undefined
            ? datastore.createQuery(this.kind)
            : datastore.createQuery(namespace, this.kind);
        const query = base
          .filter(new PropertyFilter("expiresAt", "<=", new Date(now)) as never)
          .select("__key__")
          .limit(PURGE_BATCH);
        const [rows] = (await datastore.runQuery(query as never)) as [Record<symbol, unknown>[]];
        if (rows.length === 0) return removed;
        const keys = rows.map((row) => row[datastore.KEY]);
        const deleted = await withRetry(this.retry, async () => {
          const tx = datastore.transaction();
          try {
            await tx.run();
            const [entities] = (await tx.get(keys as never)) as [StoredEntity[]];
            const stale = entities.filter((e) => e.expiresAt.getTime() <= Date.now());
            for (const entity of stale) tx.delete(entity[datastore.KEY] as never);
            await commitOrRollback(tx, stale.length > 0);
            return stale.length;
          } catch (error) {
            await tx.rollback().catch(() => {});
            throw error;
          }
        });
        removed += deleted;
        if (rows.length < PURGE_BATCH || deleted === 0) return removed;
      }
    } catch (error) {
      if (error instanceof BackendError) throw error;
      throw new BackendError("datastore", "purgeExpired", undefined, error);
    }
  }

  /**
   * Closes the client if the lock created it (its gRPC channels); a given one stays open.
   * A later call creates a new client.
   */
  async close(): Promise<void> {
    if (!this.ownsClient || this.client === undefined) return;
    const pending = this.client;
    this.client = undefined;
    this.ownsClient = false;
    const client = (await pending.catch(() => undefined)) as OwnedDatastore | undefined;
    // The Datastore class has no close() of its own: its gRPC clients, made on demand, do.
    const stubs = [...(client?.clients_?.values() ?? [])];
    client?.clients_?.clear();
    await Promise.all(stubs.map((stub) => stub.close?.()));
  }

  private isCurrent(
    record: StoredRecord | undefined,
    claim: Claim,
    now: number,
  ): record is StoredRecord {
    return (
      record !== undefined &&
      record.fencingId === claim.fencingId &&
      now < record.expiresAt.getTime()
    );
  }

  /**
   * One transaction: look the record up, let `decide` choose, commit its write or roll back.
   * Transient errors retry the whole transaction, re-reading the record and the clock.
   */
  private async transact<T>(
    verb: string,
    key: string,
    decide: (record: StoredRecord | undefined, now: number) => { result: T; write?: StoredRecord },
  ): Promise<T> {
    try {
      const datastore = await this.datastore();
      const entityKey = this.entityKey(datastore, key);
      return await withRetry(this.retry, async () => {
        const tx = datastore.transaction();
        let committing = false;
        try {
          // An explicit begin: the driver's lazy begin-with-lookup left the emulator holding
          // a second transaction's lock (commit then hit "Transaction lock timeout").
          await tx.run();
          const [entity] = (await tx.get(entityKey as never)) as [StoredEntity | undefined];
          const { result, write } = decide(
            entity === undefined ? undefined : toRecord(entity),
            Date.now(),
          );
          if (write) tx.save({ key: entityKey, data: { ...write }, excludeFromIndexes: UNINDEXED });
          committing = true;
          await commitOrRollback(tx, write !== undefined);
          return result;
        } catch (error) {
          // A failed commit has ended the transaction already; otherwise free its locks.
          if (!committing) await tx.rollback().catch(() => {});
          throw error;
        }
      });
    } catch (error) {
      if (error instanceof BackendError || error instanceof InvalidConfiguration) throw error;
      throw new BackendError("datastore", verb, key, error);
    }
  }

  private datastore(): Promise<DatastoreLike> {
    if (this.client === undefined) {
      this.ownsClient = true;
      const created = this.loadDriver().then(({ Datastore }) => {
        const settings: Record<string, string> = {};
        if (this.projectId !== undefined) settings.projectId = this.projectId;
        if (this.databaseId !== undefined) settings.databaseId = this.databaseId;
        return new Datastore(settings) as unknown as DatastoreLike;
      });
      this.client = created;
      // A failed import is not cached: the next call tries again.
      created.catch(() => {
        if (this.client === created) this.client = undefined;
      });
    }
    return this.client;
  }

  private loadDriver(): Promise<DatastoreModule> {
    this.driver ??= import("@google-cloud/datastore").then(
      (module) => module as unknown as DatastoreModule,
    );
    this.driver.catch(() => {
      this.driver = undefined;
    });
    return this.driver;
  }
}

/** What `close()` reaches of a client it created: the per-API gRPC clients, by name. */
interface OwnedDatastore {
  clients_?: Map<string, { close?(): Promise<void> }>;
}

interface DatastoreModule {
  Datastore: new (settings: Record<string, string>) => unknown;
  PropertyFilter: new (property: string, operator: string, value: unknown) => unknown;
}

type StoredEntity = Omit<StoredRecord, "expiresAt"> & {
  expiresAt: Date;
  [key: symbol]: unknown;
};

function toRecord(entity: StoredEntity): StoredRecord {
  return {
    key: entity.key,
    state: entity.state,
    fencingId: Number(entity.fencingId),
    leaseExpiresAt: Number(entity.leaseExpiresAt),
    expiresAt: entity.expiresAt,
    token: entity.token,
  };
}

async function commitOrRollback(tx: DatastoreTransactionLike, commit: boolean): Promise<void> {
  // A read-only outcome still ends the transaction, or its locks linger until timeout.
  if (commit) await tx.commit();
  else await tx.rollback();
}

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
