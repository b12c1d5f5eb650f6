/**
 * `DatastoreLock`, for Firestore in Datastore mode (@google-cloud/datastore).
 *
 * @module gcp-pubsub-idempotency/datastore
 */
import type { DEFAULT_TTL_MS } from "../../core/constants.js";
import { type BackendError, InvalidConfiguration } from "../../core/errors.js";
import { announcePeerLoading, importPeer } from "../../core/peer.js";
import type {
  BackendSupport,
  Claim,
  ClaimOptions,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  LockBackend,
  PurgeOptions,
  TransactionalLockBackend,
  TransactionCompletion,
} from "../../core/port.js";
import { claimFingerprint, completeResult } from "../../core/record-fields.js";
import { offerTrustedPort } from "../../core/trusted-port.js";
import {
  assertFencingId,
  assertPositiveMs,
  assertValidKey,
  booleanOption,
  stringOption,
} from "../../core/validate.js";
import { KEEPALIVE_SETTINGS } from "../google/grpc.js";
import { loadOnce } from "../google/lazy-client.js";
import { googleLockOptions, nameOption } from "../google/options.js";
import { type RecordIdLayout, recordIds } from "../google/record-ids.js";
import { GoogleRecords } from "../google/records.js";
import type { RetryOptions } from "../google/retry-options.js";
import { DOCUMENT_MAX_RESULT_BYTES } from "../google/stored-record.js";
import type { DatastoreLike, DatastoreModule, DatastoreTransactionLike } from "./client.js";
import { DatastoreIo, encodeName } from "./io.js";

export type { RecordIdLayout } from "../google/record-ids.js";
export type { RetryOptions } from "../google/retry-options.js";
export type { DatastoreLike, DatastoreQueryLike, DatastoreTransactionLike } from "./client.js";
export { decodeName, encodeName } from "./io.js";

/**
 * Options of {@link DatastoreLock}; all optional. The constructor checks each one before any
 * I/O and throws {@link InvalidConfiguration} naming the option for a value of the wrong
 * type or out of range; an unknown option name is refused (naming the closest known one).
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
export interface DatastoreLockOptions<D extends DatastoreLike = DatastoreLike> {
  /**
   * A Datastore client to use (an object with `key()`, `get()`, `insert()` and
   * `transaction()`); default: one created on first use (ADC / DATASTORE_EMULATOR_HOST),
   * which `close()` closes. A given client stays yours.
   */
  datastore?: D | undefined;
  /** For the client created on first use: a project id (printable ASCII, no spaces). */
  projectId?: string | undefined;
  /** For the client created on first use: a named database; default `(default)`. */
  databaseId?: string | undefined;
  /**
   * Namespace of the records: 1 to 100 of `[0-9A-Za-z._-]`, not of the form `__name__`
   * (reserved). Default: the client's own namespace, or the default namespace for a client
   * without one. An empty string is refused rather than read as either: omit the option.
   */
  namespace?: string | undefined;
  /** Kind of the records; default `IdempotencyRecord`. */
  kind?: string | undefined;
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to `MAX_TTL_MS` (10 years);
   * default {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number | undefined;
  /** Bounds on retrying ABORTED / UNAVAILABLE / lock timeouts. */
  retry?: RetryOptions | undefined;
  /**
   * How records are named. `"spread"` (default): a 4-hex-digit hash of the key before it
   * (`3f0a~orders:42`), so rising keys spread over the key space instead of hotspotting one
   * tablet. `"plain"`: 0.1's names (`korders:42`), for a kind 0.1 instances still write.
   * `"migrating"`: spread, reading a key's plain name too when its spread one is absent (same
   * RPC), for one ttl after the last plain writer stopped. See docs/capacity.md.
   */
  recordIds?: RecordIdLayout | undefined;
  /**
   * Whether `expiresAt` is written indexed; default `true`, which `purgeExpired()` needs. An
   * indexed field that rises with time caps a kind at about 500 writes per second
   * (docs/capacity.md): above that, pass `false` and let the kind's TTL policy on `expiresAt`
   * reap the records (it needs no index); `purgeExpired()` then refuses, saying so.
   */
  indexExpiresAt?: boolean | undefined;
}

/**
 * The transaction handle {@link gcp-pubsub-idempotency!lockInTransaction}'s body gets from a `DatastoreLock` over
 * client `D`: the driver's own `Transaction` when you pass your `Datastore`, else the
 * structural {@link DatastoreTransactionLike}.
 *
 * @example
 * ```ts
 * import { Datastore, type Transaction } from "@google-cloud/datastore";
 * import type { DatastoreTransactionOf } from "gcp-pubsub-idempotency/datastore";
 *
 * const tx: DatastoreTransactionOf<Datastore> = new Datastore().transaction();
 * const same: Transaction = tx;
 * ```
 */
export type DatastoreTransactionOf<D> = D extends {
  /** The client's transaction factory. */
  transaction(...options: never[]): infer X;
}
  ? X
  : DatastoreTransactionLike;

/** A kind name: not `__…__` (reserved); non-empty, at most 1,500 bytes (checked apart). */
const KIND_PATTERN = /^(?!__.*__$)/s;
/** A namespace: 1 to 100 of `[0-9A-Za-z._-]`, not `__…__` (reserved). */
const NAMESPACE_PATTERN = /^(?!__.*__$)[0-9A-Za-z._-]{1,100}$/;

/**
 * Firestore in Datastore mode (or legacy Datastore) as the store. `claim` answers held / done
 * with one strongly consistent lookup, takes an absent key with a lookup and an insert
 * (refused with ALREADY_EXISTS if another claim created it first), and reclaims a lapsed
 * record in a transaction (begin, lookup, commit). `complete`, `release` and `renew` are one
 * transaction each.
 *
 * Time is the store's: the driver surfaces no lookup's read time, so the lock keeps bounds
 * on the store's time, learned from the commit time of each write it makes (before its first,
 * from one empty transaction: 2 RPCs once), advanced by this process's monotonic clock. Each
 * call decides at the earliest the store's time can be, so no offset or step of an instance's
 * clock lets two instances hold a key. The bounds are as wide as the round trip of the commit
 * they come from, plus 0.2 % of the time since (twice the most NTP slews a clock, for each
 * side): a lapsed lease is taken over up to that much late, and a lease written starts up to
 * that much early (milliseconds, against leases of minutes).
 *
 * Records are deleted only after `expiresAt`: configure a TTL policy on the `expiresAt`
 * property of the kind, or call `purgeExpired()` periodically.
 *
 * {@link gcp-pubsub-idempotency!lockInTransaction} runs its body in a `datastore.transaction()` and completes the
 * claim in it (see {@link DatastoreLock.completeInTransaction}); keep the kind beside your
 * entities (same database, your namespace).
 *
 * The constructor does no I/O; without a `datastore` of yours it starts importing @google-cloud/datastore, and
 * when that package is not installed a surface built over the lock logs one ERROR line at
 * once, and every call rejects with an `InvalidConfiguration` naming `npm install @google-cloud/datastore`.
 * Store failures reject with a {@link BackendError} once the
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
export class DatastoreLock<D extends DatastoreLike = DatastoreLike>
  implements TransactionalLockBackend<DatastoreTransactionOf<D>>
{
  /** Kind of the records. */
  readonly kind: string;
  /** Namespace of the records as given; undefined means the client's default namespace. */
  readonly namespace: string | undefined;
  /** How long a DONE key suppresses duplicates, in ms. */
  readonly ttlMs: number;
  /** How the records are named (the `recordIds` option). */
  readonly recordIds: RecordIdLayout;
  /** Whether `expiresAt` is written indexed (the `indexExpiresAt` option). */
  readonly indexExpiresAt: boolean;
  /**
   * Results up to 1,000,000 UTF-8 bytes and fingerprints, kept as unindexed properties of the
   * record, the result written in the same commit as DONE (see `DOCUMENT_MAX_RESULT_BYTES`).
   */
  readonly supports: BackendSupport = {
    results: true,
    fingerprints: true,
    maxResultBytes: DOCUMENT_MAX_RESULT_BYTES,
  };
  private readonly records: GoogleRecords<DatastoreLike, DatastoreTransactionLike>;

  /**
   * Checks every option before any I/O (see {@link DatastoreLockOptions}): a value of the
   * wrong type or out of range throws {@link InvalidConfiguration} naming the option.
   */
  constructor(options: DatastoreLockOptions<D> = {}) {
    const driver = loadOnce(() =>
      importPeer(
        "DatastoreLock",
        "@google-cloud/datastore",
        () => import("@google-cloud/datastore"),
      ).then((module) => module as unknown as DatastoreModule),
    );
    const setup = googleLockOptions(
      "DatastoreLock",
      options,
      {
        option: "datastore",
        methods: ["key", "get", "insert", "transaction"],
        what: "a @google-cloud/datastore Datastore",
        create: async (settings) =>
          new (await driver()).Datastore({ ...settings, ...KEEPALIVE_SETTINGS }) as DatastoreLike,
      },
      ["namespace", "kind", "indexExpiresAt"],
    );
    this.namespace = stringOption(
      "namespace",
      setup.own.namespace,
      NAMESPACE_PATTERN,
      "1 to 100 of [0-9A-Za-z._-], not of the form __name__ (omit it for the client's own " +
        "namespace; an empty string is not taken to mean the default)",
    );
    this.kind =
      nameOption(
        "kind",
        setup.own.kind,
        1500,
        KIND_PATTERN,
        "a non-empty name of at most 1,500 UTF-8 bytes, not of the form __name__",
      ) ?? "IdempotencyRecord";
    this.ttlMs = setup.ttlMs;
    this.recordIds = setup.recordIds;
    this.indexExpiresAt = booleanOption("indexExpiresAt", setup.own.indexExpiresAt) ?? true;
    this.records = new GoogleRecords(
      new DatastoreIo(
        this.kind,
        this.namespace,
        driver,
        setup.clock,
        recordIds(
          setup.recordIds,
          (key) => encodeName(key, "plain"),
          (key) => key,
        ),
        this.indexExpiresAt,
      ),
      setup,
    );
    if (new.target === DatastoreLock) offerTrustedPort(this, this.records.port());
    // Without a client of yours the driver is needed: loaded now, so that a surface built over
    // this lock reports its absence at once (the first call rejects with the same text).
    if (!setup.clientGiven) announcePeerLoading(this, driver());
  }

  async claim(key: string, leaseMs: number, options?: ClaimOptions): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    return this.records.claim(key, leaseMs, claimFingerprint(options));
  }

  async complete(claim: Claim, result?: string): Promise<boolean> {
    assertValidKey(claim.key);
    return this.records.complete(claim, completeResult(result, this.supports.maxResultBytes));
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    return this.records.release(claim);
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    return this.records.renew(claim, leaseMs);
  }

  /**
   * Run `body` in one Datastore transaction (begun explicitly), then look the record up in
   * that transaction and complete it there when the fence matches: the body's mutations and
   * DONE commit together. Looked up last, the record is locked only for the commit, so a
   * reclaim is not held up by a long body. A stale fence rolls back (`completed: false`); a
   * body that throws rolls back and rejects with its error; a failed commit rejects with a
   * {@link BackendError}. ABORTED contention and the other transient errors run the whole
   * transaction again, the body included, as any Datastore transaction function may be run:
   * keep the body free of effects outside `tx`. A retry that finds its earlier commit landed
   * does not commit again. {@link gcp-pubsub-idempotency!lockInTransaction} calls it; you rarely do.
   *
   * @example
   * ```ts
   * import { Datastore } from "@google-cloud/datastore";
   * import { lockInTransaction } from "gcp-pubsub-idempotency";
   * import { DatastoreLock } from "gcp-pubsub-idempotency/datastore";
   *
   * const datastore = new Datastore();
   * const backend = new DatastoreLock({ datastore, namespace: "orders-svc" });
   * await lockInTransaction("orders:4711", { backend }, async (tx) => {
   *   // tx is the driver's Transaction: its mutations commit with the key's DONE.
   *   tx.insert({ key: datastore.key(["Order", "4711"]), data: { total: 99 } });
   * });
   * ```
   */
  async completeInTransaction<T>(
    claim: Claim,
    body: (tx: DatastoreTransactionOf<D>) => Promise<T>,
  ): Promise<TransactionCompletion<T>> {
    assertValidKey(claim.key);
    return this.records.completeInTransaction(
      claim,
      body as (tx: DatastoreTransactionLike) => Promise<T>,
    );
  }

  /**
   * Delete the records past their expiry at once, for what the kind's TTL policy has not
   * reaped yet: 500 per transaction, each record judged again as it is deleted, so one
   * reclaimed since the query is left alone.
   */
  purgeExpired(options?: PurgeOptions): Promise<number> {
    if (!this.indexExpiresAt) {
      return Promise.reject(
        new InvalidConfiguration(
          "purgeExpired() queries expiresAt, which this DatastoreLock writes unindexed " +
            "(indexExpiresAt: false): let the kind's TTL policy on expiresAt reap the records, " +
            "or drop the option",
        ),
      );
    }
    return this.records.purgeExpired(options);
  }

  /**
   * Closes the client if the lock made it (its gRPC channels); a given one stays open. A
   * later call makes a new one.
   */
  close(): Promise<void> {
    return this.records.close();
  }

  // Operator calls (the CLI's inspect and release), in the store's time.

  /** The record of `key` as stored, and the store's time (the earliest it can be); see {@link LockBackend.inspect}. */
  async inspect(key: string): Promise<InspectedRecord | undefined> {
    assertValidKey(key);
    return this.records.inspect(key);
  }

  /** Free a stuck claim seen at `fencingId`; see {@link LockBackend.forceRelease}. */
  async forceRelease(key: string, fencingId: number): Promise<ForceReleaseOutcome> {
    assertValidKey(key);
    assertFencingId(fencingId);
    return this.records.forceRelease(key, fencingId);
  }
}
