/**
 * `FirestoreLock`, for Firestore native mode (@google-cloud/firestore or firebase-admin).
 *
 * @module gcp-pubsub-idempotency/firestore
 */
import type { DEFAULT_TTL_MS } from "../../core/constants.js";
import type { BackendError } from "../../core/errors.js";
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
import { assertFencingId, assertPositiveMs, assertValidKey } from "../../core/validate.js";
import { KEEPALIVE_SETTINGS } from "../google/grpc.js";
import { loadOnce } from "../google/lazy-client.js";
import { googleLockOptions, nameOption } from "../google/options.js";
import { type RecordIdLayout, recordIds } from "../google/record-ids.js";
import { GoogleRecords } from "../google/records.js";
import type { RetryOptions } from "../google/retry-options.js";
import { DOCUMENT_MAX_RESULT_BYTES } from "../google/stored-record.js";
import type { FirestoreLike, FirestoreModule, FirestoreTransactionLike } from "./client.js";
import { encodeDocumentId, FirestoreIo } from "./io.js";

export type { RecordIdLayout } from "../google/record-ids.js";
export type { RetryOptions } from "../google/retry-options.js";
export type {
  FirestoreCollectionLike,
  FirestoreDocumentLike,
  FirestoreLike,
  FirestoreQueryLike,
  FirestoreSnapshotLike,
  FirestoreTransactionLike,
} from "./client.js";
export { decodeDocumentId, encodeDocumentId } from "./io.js";

/**
 * Options of {@link FirestoreLock}; all optional. The constructor checks each one before any
 * I/O and throws `InvalidConfiguration` naming the option for a value of the wrong type or
 * out of range; an unknown option name is refused (naming the closest known one).
 *
 * @example
 * ```ts
 * import { FirestoreLock, type FirestoreLockOptions } from "gcp-pubsub-idempotency/firestore";
 *
 * const options: FirestoreLockOptions = {
 *   collection: "orders-idempotency",
 *   databaseId: "orders",
 *   retry: { attempts: 5 },
 * };
 * const backend = new FirestoreLock(options);
 * ```
 */
export interface FirestoreLockOptions<F extends FirestoreLike = FirestoreLike> {
  /**
   * A Firestore instance (an object with `collection()`); default: one created on first use
   * (ADC / FIRESTORE_EMULATOR_HOST), which `close()` terminates. A given one stays yours.
   */
  firestore?: F | undefined;
  /** For the instance created on first use: a project id (printable ASCII, no spaces). */
  projectId?: string | undefined;
  /** For the instance created on first use: a named database; default `(default)`. */
  databaseId?: string | undefined;
  /**
   * Collection of the records: one path segment (no `/`), not `.`, `..` or `__name__`, at
   * most 1,500 UTF-8 bytes; default `idempotency-records`.
   */
  collection?: string | undefined;
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to `MAX_TTL_MS` (10 years);
   * default {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number | undefined;
  /** Bounds on retrying ABORTED / UNAVAILABLE. */
  retry?: RetryOptions | undefined;
  /**
   * How records are named. `"spread"` (default): a 4-hex-digit hash of the key before it
   * (`3f0a~b3JkZXJzLzQy`), so rising keys spread over the key space instead of hotspotting one
   * split. `"plain"`: 0.1's ids (`kb3JkZXJzLzQy`), for documents 0.1 instances still write.
   * `"migrating"`: spread, reading a key's plain id too when its spread one is absent, for
   * one ttl after the last plain writer stopped. See docs/capacity.md.
   */
  recordIds?: RecordIdLayout | undefined;
}

/**
 * The transaction handle {@link gcp-pubsub-idempotency!lockInTransaction}'s body gets from a `FirestoreLock` over
 * instance `F`: the driver's own `Transaction` when you pass your `Firestore`, else the
 * structural {@link FirestoreTransactionLike}.
 *
 * @example
 * ```ts
 * import type { Firestore, Transaction } from "@google-cloud/firestore";
 * import type { FirestoreTransactionOf } from "gcp-pubsub-idempotency/firestore";
 *
 * const same = (tx: FirestoreTransactionOf<Firestore>): Transaction => tx;
 * ```
 */
export type FirestoreTransactionOf<F> = F extends {
  /** The instance's transaction runner. */
  runTransaction<T>(update: (transaction: infer X) => Promise<T>, ...options: never[]): Promise<T>;
}
  ? X
  : FirestoreTransactionLike;

/** A collection id: one path segment, not `.`/`..`, not `__…__` (1,500 bytes checked apart). */
const COLLECTION_PATTERN = /^(?!__.*__$)(?!\.\.?$)[^/]+$/s;

/**
 * Firestore (native mode) as the store, without transactions: an absent key is claimed with
 * `create()` (fails if the document exists), a reclaim and every other write is an `update`
 * with a last-update-time precondition, so a concurrent writer makes it fail and we re-read.
 *
 * Time is the store's: a record is judged at the read time of the read it was decided on,
 * and a win at its write time, so no offset or step of an instance's clock lets two instances
 * hold a key. Only the one-write claim of an absent key starts its lease without a read: at
 * the earliest the store's time can be, bounded from earlier answers' times
 * (google/store-clock.ts), up to one round trip early; until a write has told the bounds,
 * that claim reads first (2 RPCs). Records are deleted only after
 * `expiresAt`: configure a TTL policy on `expiresAt` for the collection, or call
 * `purgeExpired()`.
 *
 * The constructor does no I/O; without a `firestore` of yours it starts importing @google-cloud/firestore, and
 * when that package is not installed a surface built over the lock logs one ERROR line at
 * once, and every call rejects with an `InvalidConfiguration` naming `npm install @google-cloud/firestore`.
 * Store failures reject with a {@link BackendError} once the
 * transient ones have been retried (see {@link RetryOptions}).
 *
 * {@link gcp-pubsub-idempotency!lockInTransaction} runs its body in `runTransaction` and completes the claim in it
 * (see {@link FirestoreLock.completeInTransaction}); keep the collection beside yours.
 *
 * @example
 * ```ts
 * import { lock } from "gcp-pubsub-idempotency";
 * import { FirestoreLock } from "gcp-pubsub-idempotency/firestore";
 *
 * // The instance is created on first use: ADC, or FIRESTORE_EMULATOR_HOST.
 * const backend = new FirestoreLock({ collection: "idempotency-records" });
 * await lock("orders/4711", { backend }, async () => {}); // any key, "/" included
 * await backend.close();
 * ```
 */
export class FirestoreLock<F extends FirestoreLike = FirestoreLike>
  implements TransactionalLockBackend<FirestoreTransactionOf<F>>
{
  /** Collection of the records. */
  readonly collection: string;
  /** How long a DONE key suppresses duplicates, in ms. */
  readonly ttlMs: number;
  /** How the records are named (the `recordIds` option). */
  readonly recordIds: RecordIdLayout;
  /**
   * Results up to 1,000,000 UTF-8 bytes and fingerprints, kept as fields of the record's
   * document, the result written in the same write as DONE. Firestore indexes every field by
   * default and keeps only the first 1,500 bytes of a string in its index (the value itself is
   * kept whole): add a single-field index exemption for `result` (and `fingerprint`, `key`,
   * `token`) to the collection, which saves the index writes and storage; see the backend's
   * page in docs/backends/firestore.md.
   */
  readonly supports: BackendSupport = {
    results: true,
    fingerprints: true,
    maxResultBytes: DOCUMENT_MAX_RESULT_BYTES,
  };
  private readonly records: GoogleRecords<FirestoreLike, FirestoreTransactionLike>;

  /**
   * Checks every option before any I/O (see {@link FirestoreLockOptions}): a value of the
   * wrong type or out of range throws `InvalidConfiguration` naming the option.
   */
  constructor(options: FirestoreLockOptions<F> = {}) {
    const driver = loadOnce(() =>
      importPeer(
        "FirestoreLock",
        "@google-cloud/firestore",
        () => import("@google-cloud/firestore"),
      ).then((module) => module as unknown as FirestoreModule),
    );
    const setup = googleLockOptions(
      "FirestoreLock",
      options,
      {
        option: "firestore",
        methods: ["collection"],
        what: "a @google-cloud/firestore (or firebase-admin) Firestore",
        create: async (settings) =>
          new (await driver()).Firestore({ ...settings, ...KEEPALIVE_SETTINGS }) as FirestoreLike,
      },
      ["collection"],
    );
    this.collection =
      nameOption(
        "collection",
        setup.own.collection,
        1500,
        COLLECTION_PATTERN,
        'one path segment of at most 1,500 UTF-8 bytes, not "." / ".." / __name__',
      ) ?? "idempotency-records";
    this.ttlMs = setup.ttlMs;
    this.recordIds = setup.recordIds;
    const ids = recordIds(
      setup.recordIds,
      (key) => encodeDocumentId(key, "plain"),
      (key) => Buffer.from(key, "utf8").toString("base64url"),
    );
    this.records = new GoogleRecords(new FirestoreIo(this.collection, setup.clock, ids), setup);
    if (new.target === FirestoreLock) offerTrustedPort(this, this.records.port());
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
   * Run `body` in `runTransaction`, then complete the record in that same transaction when
   * the fence matches: the body's writes and DONE commit together. The record is read after
   * the body, outside the transaction, and DONE is written under that read's last-update-time
   * precondition: a long body holds no lock on the record (claims of the key still answer
   * held at once), and a reclaim since the read fails the commit, so nothing lands and the
   * next attempt re-checks the fence. A stale fence rolls back (`completed: false`); a body
   * that throws rolls back and rejects with its error; a failed commit rejects with a
   * {@link BackendError}.
   *
   * Like any Firestore transaction function, the body may run more than once (contention on
   * the documents it reads, a lost commit response, the record moving under it): keep it free
   * of effects outside `tx`, and do all its reads before its writes. A retry that finds its
   * earlier commit landed does not commit again. {@link gcp-pubsub-idempotency!lockInTransaction} calls it; you
   * rarely do.
   *
   * @example
   * ```ts
   * import { Firestore } from "@google-cloud/firestore";
   * import { lockInTransaction } from "gcp-pubsub-idempotency";
   * import { FirestoreLock } from "gcp-pubsub-idempotency/firestore";
   *
   * const firestore = new Firestore();
   * const backend = new FirestoreLock({ firestore, collection: "orders-idempotency" });
   * await lockInTransaction("orders:4711", { backend }, async (tx) => {
   *   // tx is the driver's Transaction: this create commits with the key's DONE.
   *   tx.create(firestore.collection("orders").doc("4711"), { total: 99 });
   * });
   * ```
   */
  async completeInTransaction<T>(
    claim: Claim,
    body: (tx: FirestoreTransactionOf<F>) => Promise<T>,
  ): Promise<TransactionCompletion<T>> {
    assertValidKey(claim.key);
    return this.records.completeInTransaction(
      claim,
      body as (tx: FirestoreTransactionLike) => Promise<T>,
    );
  }

  /**
   * Delete the records past their expiry at once, for what the collection's TTL policy has
   * not reaped yet: 300 per batch, each deleted under its last-update-time precondition, so
   * one reclaimed since the query is left alone.
   */
  purgeExpired(options?: PurgeOptions): Promise<number> {
    return this.records.purgeExpired(options);
  }

  /**
   * Terminates the Firestore instance if the lock made it; a given one stays open. A later
   * call makes a new one.
   */
  close(): Promise<void> {
    return this.records.close();
  }

  // Operator calls (the CLI's inspect and release), in the store's time.

  /** The record of `key` as stored, and the store's time at the read; see {@link LockBackend.inspect}. */
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
