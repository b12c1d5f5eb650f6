/**
 * `FirestoreLock`, for Firestore native mode (@google-cloud/firestore or firebase-admin).
 *
 * @module gcp-pubsub-idempotency/firestore
 */
import { DEFAULT_TTL_MS } from "../../core/constants.js";
import { BackendError } from "../../core/errors.js";
import type { Claim, ClaimOutcome, LockBackend } from "../../core/types.js";
import { assertPositiveMs, assertValidKey, readOptions, ttlOption } from "../../core/validate.js";
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
  /** Claim an absent key: fails with ALREADY_EXISTS when the document exists. */
  create(data: never): Promise<unknown>;
  /** Write under a `lastUpdateTime` precondition: fails when someone wrote meanwhile. */
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
}

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

interface StoredRecord {
  key: string;
  state: "claimed" | "done";
  fencingId: number;
  leaseExpiresAt: number;
  /** Stored as a timestamp so a TTL policy on it can reap the document. */
  expiresAt: Date;
  token: string;
}

/** gRPC codes a precondition race answers with. */
const ALREADY_EXISTS = 6;
const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;

/** Reads and writes per call before giving up on a key that keeps changing under us. */
const MAX_RACES = 20;
const PURGE_BATCH = 300;

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
  private readonly projectId: string | undefined;
  private readonly databaseId: string | undefined;
  private readonly retry: ResolvedRetry;
  private client: Promise<FirestoreLike> | undefined;
  private ownsClient = false;

  /**
   * Checks every option before any I/O (see {@link FirestoreLockOptions}): a value of the
   * wrong type or out of range throws `InvalidConfiguration` naming the option.
   */
  constructor(options: FirestoreLockOptions = {}) {
    const read = readOptions("FirestoreLock", options, true, [
      "firestore",
      "projectId",
      "databaseId",
      "collection",
      "ttlMs",
      "retry",
    ]);
    const firestore = clientOption<FirestoreLike>(
      "firestore",
      read.firestore,
      ["collection"],
      "a @google-cloud/firestore (or firebase-admin) Firestore",
    );
    ({ projectId: this.projectId, databaseId: this.databaseId } = googleProjectOptions(read));
    this.collection =
      nameOption(
        "collection",
        read.collection,
        1500,
        COLLECTION_PATTERN,
        'one path segment of at most 1,500 UTF-8 bytes, not "." / ".." / __name__',
      ) ?? "idempotency-records";
    this.ttlMs = ttlOption(read.ttlMs, DEFAULT_TTL_MS);
    this.retry = resolveRetry(read.retry);
    if (firestore !== undefined) this.client = Promise.resolve(firestore);
  }

  async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    // One token per call, shared by its retries: a retry that finds it knows its write landed.
    const token = newToken();
    const fresh = (fencingId: number, now: number): StoredRecord => ({
      key,
      state: "claimed",
      fencingId,
      leaseExpiresAt: now + leaseMs,
      expiresAt: new Date(now + leaseMs + this.ttlMs),
      token,
    });
    const won = (record: StoredRecord): ClaimOutcome => ({
      status: "won",
      claim: { key, fencingId: record.fencingId, leaseExpiresAt: record.leaseExpiresAt },
    });
    const outcome = await this.run<ClaimOutcome>("claim", key, async (ref) => {
      // Most keys are first deliveries: try the one-write path first.
      let tryCreate = true;
      for (let race = 0; race < MAX_RACES; race++) {
        if (tryCreate) {
          const record = fresh(1, Date.now());
          try {
            await ref.create(record as never);
            return won(record);
          } catch (error) {
            if (codeOf(error) !== ALREADY_EXISTS) throw error;
          }
        }
        const snapshot = await ref.get();
        const current = readRecord(snapshot);
        if (current === undefined) {
          tryCreate = true; // deleted meanwhile (TTL or purge): start over at fence 1
          continue;
        }
        tryCreate = false;
        const now = Date.now();
        if (current.token === token && current.state === "claimed") return won(current);
        if (current.state === "done") {
          if (now < current.expiresAt.getTime()) return { status: "done" };
        } else if (now < current.leaseExpiresAt) {
          return { status: "held", leaseExpiresAt: current.leaseExpiresAt };
        }
        const record = fresh(current.fencingId + 1, now);
        if (await this.updateIfUnchanged(ref, snapshot, record)) return won(record);
      }
      throw new Error(`the record kept changing during ${MAX_RACES} attempts`);
    });
    return unlessLapsed(outcome, Date.now());
  }

  async complete(claim: Claim): Promise<boolean> {
    assertValidKey(claim.key);
    return this.modify(
      "complete",
      claim,
      (record, now) => {
        // A retried complete (its first write landed) finds it done and still says true.
        if (record.state === "done") return { result: true };
        return { result: true, write: { state: "done", expiresAt: new Date(now + this.ttlMs) } };
      },
      false,
    );
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    await this.modify<undefined>(
      "release",
      claim,
      (record, now) => {
        if (record.state !== "claimed") return { result: undefined };
        return {
          result: undefined,
          write: {
            fencingId: record.fencingId + 1,
            leaseExpiresAt: now,
            expiresAt: new Date(now + this.ttlMs),
          },
        };
      },
      undefined,
    );
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    return this.modify(
      "renew",
      claim,
      (record, now) => {
        if (record.state !== "claimed") return { result: false };
        const leaseExpiresAt = now + leaseMs;
        return {
          result: true,
          write: { leaseExpiresAt, expiresAt: new Date(leaseExpiresAt + this.ttlMs) },
        };
      },
      false,
    );
  }

  /**
   * Delete documents past `expiresAt`, for databases without a TTL policy. Each delete has a
   * last-update-time precondition, so a record reclaimed since the query is left alone.
   */
  async purgeExpired(): Promise<number> {
    try {
      const firestore = await this.firestore();
      let removed = 0;
      for (;;) {
        const query = firestore
          .collection(this.collection)
          .where("expiresAt", "<=" as never, new Date())
          .limit(PURGE_BATCH);
        const { docs } = await withRetry(this.retry, () => query.get());
        if (docs.length === 0) return removed;
        const results = await Promise.all(
          docs.map(async (doc) => {
            try {
              await doc.ref.delete({ lastUpdateTime: doc.updateTime } as never);
              return 1;
            } catch (error) {
              if (codeOf(error) === FAILED_PRECONDITION || codeOf(error) === NOT_FOUND) return 0;
              throw error;
            }
          }),
        );
        const deleted = results.reduce<number>((sum, n) => sum + n, 0);
        removed += deleted;
        if (docs.length < PURGE_BATCH || deleted === 0) return removed;
      }
    } catch (error) {
      if (error instanceof BackendError) throw error;
      throw new BackendError("firestore", "purgeExpired", undefined, error);
    }
  }

  /** Terminates the Firestore instance if the lock created it; a given one stays open. */
  async close(): Promise<void> {
    // Only an instance we created is ours to end; a given one is shared.
    if (this.ownsClient && this.client) {
      const client = await this.client.catch(() => undefined);
      this.client = undefined;
      await client?.terminate?.();
    }
  }

  /** Read, check the fence, and write back under a last-update-time precondition. */
  private modify<T>(
    verb: string,
    claim: Claim,
    decide: (record: StoredRecord, now: number) => { result: T; write?: Partial<StoredRecord> },
    /** The answer when the fence no longer matches. */
    stale: T,
  ): Promise<T> {
    return this.run(verb, claim.key, async (ref) => {
      for (let race = 0; race < MAX_RACES; race++) {
        const snapshot = await ref.get();
        const record = readRecord(snapshot);
        const now = Date.now();
        if (
          record === undefined ||
          record.fencingId !== claim.fencingId ||
          now >= record.expiresAt.getTime()
        ) {
          return stale;
        }
        const { result, write } = decide(record, now);
        if (write === undefined) return result;
        if (await this.updateIfUnchanged(ref, snapshot, write)) return result;
      }
      throw new Error(`the record kept changing during ${MAX_RACES} attempts`);
    });
  }

  /** False when someone wrote (or deleted) the document since `snapshot` was read. */
  private async updateIfUnchanged(
    ref: FirestoreDocumentLike,
    snapshot: FirestoreSnapshotLike,
    data: Partial<StoredRecord>,
  ): Promise<boolean> {
    try {
      await ref.update(data as never, { lastUpdateTime: snapshot.updateTime } as never);
      return true;
    } catch (error) {
      const code = codeOf(error);
      if (code === FAILED_PRECONDITION || code === NOT_FOUND) return false;
      throw error;
    }
  }

  private async run<T>(
    verb: string,
    key: string,
    fn: (ref: FirestoreDocumentLike) => Promise<T>,
  ): Promise<T> {
    try {
      const firestore = await this.firestore();
      const ref = firestore.collection(this.collection).doc(encodeDocumentId(key));
      return await withRetry(this.retry, () => fn(ref));
    } catch (error) {
      throw new BackendError("firestore", verb, key, error);
    }
  }

  private firestore(): Promise<FirestoreLike> {
    if (this.client === undefined) {
      this.ownsClient = true;
      this.client = import("@google-cloud/firestore").then((module) => {
        const Firestore = (module as unknown as FirestoreModule).Firestore;
        const settings: Record<string, string> = {};
        if (this.projectId !== undefined) settings.projectId = this.projectId;
        if (this.databaseId !== undefined) settings.databaseId = this.databaseId;
        return new Firestore(settings) as unknown as FirestoreLike;
      });
      // A failed import is not cached: the next call tries again.
      this.client.catch(() => {
        this.client = undefined;
      });
    }
    return this.client;
  }
}

interface FirestoreModule {
  Firestore: new (settings: Record<string, string>) => unknown;
}

function codeOf(error: unknown): unknown {
  return error !== null && typeof error === "object"
    ? (error as { code?: unknown }).code
    : undefined;
}

function readRecord(snapshot: FirestoreSnapshotLike): StoredRecord | undefined {
  if (!snapshot.exists) return undefined;
  const data = snapshot.data();
  if (data === undefined) return undefined;
  const expiresAt = data.expiresAt as { toMillis?: () => number } | Date | undefined;
  const expiresMs =
    expiresAt instanceof Date ? expiresAt.getTime() : Number(expiresAt?.toMillis?.() ?? 0);
  return {
    key: String(data.key),
    state: data.state === "done" ? "done" : "claimed",
    fencingId: Number(data.fencingId),
    leaseExpiresAt: Number(data.leaseExpiresAt),
    expiresAt: new Date(expiresMs),
    token: String(data.token),
  };
}

/**
 * Document id of a key: `k` + base64url of its UTF-8 bytes. Never contains `/`, is never
 * `.`, `..` or `__…__`, is reversible, and 1,024 key bytes give 1,367 id bytes (limit 1,500).
 *
 * @example
 * ```ts
 * import { encodeDocumentId } from "gcp-pubsub-idempotency/firestore";
 *
 * // Find the document of a key in the console.
 * encodeDocumentId("orders/42"); // "kb3JkZXJzLzQy"
 * ```
 */
export function encodeDocumentId(key: string): string {
  return `k${Buffer.from(key, "utf8").toString("base64url")}`;
}

/**
 * The idempotency key of a record's document id: the inverse of {@link encodeDocumentId}.
 *
 * @example
 * ```ts
 * import { decodeDocumentId } from "gcp-pubsub-idempotency/firestore";
 *
 * decodeDocumentId("kb3JkZXJzLzQy"); // "orders/42"
 * ```
 */
export function decodeDocumentId(id: string): string {
  return Buffer.from(id.slice(1), "base64url").toString("utf8");
}
