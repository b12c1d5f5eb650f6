/**
 * `FirestoreLock`, for Firestore native mode (@google-cloud/firestore or firebase-admin).
 *
 * @module gcp-pubsub-idempotency/firestore
 */
import type { DEFAULT_TTL_MS } from "../../core/constants.js";
import type { BackendError } from "../../core/errors.js";
import type {
  Claim,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  LockBackend,
  PurgeOptions,
} from "../../core/types.js";
import { googleLockOptions, loadOnce } from "../shared/google.js";
import { GoogleRecords } from "../shared/google-records.js";
import { nameOption } from "../shared/options.js";
import type { RetryOptions } from "../shared/retry-options.js";
import type { FirestoreLike, FirestoreModule } from "./client.js";
import { FirestoreIo } from "./io.js";

export type { RetryOptions } from "../shared/retry-options.js";
export type {
  FirestoreCollectionLike,
  FirestoreDocumentLike,
  FirestoreLike,
  FirestoreQueryLike,
  FirestoreSnapshotLike,
} from "./client.js";
export { decodeDocumentId, encodeDocumentId } from "./io.js";

/**
 * Options of {@link FirestoreLock}; all optional. The constructor checks each one before any
 * I/O and throws `InvalidConfiguration` naming the option for a value of the wrong type or
 * out of range; unknown option names are ignored.
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
export interface FirestoreLockOptions {
  /**
   * A Firestore instance (an object with `collection()`); default: one created on first use
   * (ADC / FIRESTORE_EMULATOR_HOST), which `close()` terminates. A given one stays yours.
   */
  firestore?: FirestoreLike;
  /** For the instance created on first use: a project id (printable ASCII, no spaces). */
  projectId?: string;
  /** For the instance created on first use: a named database; default `(default)`. */
  databaseId?: string;
  /**
   * Collection of the records: one path segment (no `/`), not `.`, `..` or `__name__`, at
   * most 1,500 UTF-8 bytes; default `idempotency-records`.
   */
  collection?: string;
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to `MAX_TTL_MS` (10 years);
   * default {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number;
  /** Bounds on retrying ABORTED / UNAVAILABLE. */
  retry?: RetryOptions;
}

/** A collection id: one path segment, not `.`/`..`, not `__…__` (1,500 bytes checked apart). */
const COLLECTION_PATTERN = /^(?!__.*__$)(?!\.\.?$)[^/]+$/s;

/**
 * Firestore (native mode) as the store, without transactions: an absent key is claimed with
 * `create()` (fails if the document exists), a reclaim and every other write is an `update`
 * with a last-update-time precondition, so a concurrent writer makes it fail and we re-read.
 *
 * Time is this process's clock (`Date.now()`): skew between instances of up to a few seconds
 * is absorbed by the lease. Records are deleted only after `expiresAt`: configure a TTL
 * policy on `expiresAt` for the collection, or call `purgeExpired()`.
 *
 * The constructor does no I/O. Store failures reject with a {@link BackendError} once the
 * transient ones have been retried (see {@link RetryOptions}).
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
export class FirestoreLock implements LockBackend {
  /** Collection of the records. */
  readonly collection: string;
  /** How long a DONE key suppresses duplicates, in ms. */
  readonly ttlMs: number;
  private readonly records: GoogleRecords<FirestoreLike>;

  /**
   * Checks every option before any I/O (see {@link FirestoreLockOptions}): a value of the
   * wrong type or out of range throws `InvalidConfiguration` naming the option.
   */
  constructor(options: FirestoreLockOptions = {}) {
    const driver = loadOnce(() =>
      import("@google-cloud/firestore").then((module) => module as unknown as FirestoreModule),
    );
    const setup = googleLockOptions(
      "FirestoreLock",
      options,
      {
        option: "firestore",
        methods: ["collection"],
        what: "a @google-cloud/firestore (or firebase-admin) Firestore",
        create: async (settings) => new (await driver()).Firestore(settings) as FirestoreLike,
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
    const io = new FirestoreIo(this.collection);
    this.records = new GoogleRecords(io, setup.client, setup.ttlMs, setup.retry);
  }

  claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    return this.records.claim(key, leaseMs);
  }

  complete(claim: Claim): Promise<boolean> {
    return this.records.complete(claim);
  }

  release(claim: Claim): Promise<void> {
    return this.records.release(claim);
  }

  renew(claim: Claim, leaseMs: number): Promise<boolean> {
    return this.records.renew(claim, leaseMs);
  }

  /**
   * Delete documents past `expiresAt`, for databases without a TTL policy. Each delete has a
   * last-update-time precondition, so a record reclaimed since the query is left alone.
   */
  purgeExpired(options?: PurgeOptions): Promise<number> {
    return this.records.purgeExpired(options);
  }

  /** Terminates the Firestore instance if the lock created it; a given one stays open. */
  close(): Promise<void> {
    return this.records.close();
  }

  // Operator calls (the CLI's inspect and release), in this process's clock.

  /** The record of `key` as stored, and this process's time; see {@link LockBackend.inspect}. */
  inspect(key: string): Promise<InspectedRecord | undefined> {
    return this.records.inspect(key);
  }

  /** Free a stuck claim seen at `fencingId`; see {@link LockBackend.forceRelease}. */
  forceRelease(key: string, fencingId: number): Promise<ForceReleaseOutcome> {
    return this.records.forceRelease(key, fencingId);
  }
}
