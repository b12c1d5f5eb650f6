/**
 * `SpannerLock`, for Cloud Spanner (GoogleSQL dialect) through @google-cloud/spanner.
 *
 * @module gcp-pubsub-idempotency/spanner
 */
import type { DEFAULT_TTL_MS } from "../../core/constants.js";
import type { BackendError } from "../../core/errors.js";
import { InvalidConfiguration } from "../../core/errors.js";
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
import { loadOnce } from "../google/lazy-client.js";
import { googleLockOptions, nameOption } from "../google/options.js";
import { type RecordIdLayout, recordIds } from "../google/record-ids.js";
import { GoogleRecords } from "../google/records.js";
import type { RetryOptions } from "../google/retry-options.js";
import { callStore } from "../shared/store-call.js";
import type { SpannerDatabaseLike, SpannerModule, SpannerTransactionLike } from "./client.js";
import { renderSchema, renderUpgrade, SPANNER_MAX_RESULT_BYTES, SpannerIo } from "./io.js";

export type { RecordIdLayout } from "../google/record-ids.js";
export type { RetryOptions } from "../google/retry-options.js";
export type {
  SpannerCommitResponseLike,
  SpannerDatabaseLike,
  SpannerMutationSetLike,
  SpannerTransactionLike,
} from "./client.js";

/**
 * Options of {@link SpannerLock}: a `database`, or the ids to open one with; the rest
 * optional. The constructor checks each one before any I/O and throws `InvalidConfiguration`
 * naming the option for a value of the wrong type or out of range; an unknown option name is
 * refused (naming the closest known one).
 *
 * @example
 * ```ts
 * import { SpannerLock, type SpannerLockOptions } from "gcp-pubsub-idempotency/spanner";
 *
 * const options: SpannerLockOptions = {
 *   instanceId: "main",
 *   databaseId: "orders",
 *   table: "orders_idempotency",
 *   retry: { attempts: 5 },
 * };
 * const backend = new SpannerLock(options);
 * ```
 */
export interface SpannerLockOptions<Tx extends SpannerTransactionLike = SpannerTransactionLike> {
  /**
   * A `Database` of @google-cloud/spanner (`spanner.instance(i).database(d)`); default: one
   * opened on first use from `projectId` / `instanceId` / `databaseId` (ADC, or
   * SPANNER_EMULATOR_HOST), which `close()` closes. A given one stays yours.
   */
  database?: SpannerDatabaseLike<Tx> | undefined;
  /** For the database opened on first use: a project id (printable ASCII, no spaces). */
  projectId?: string | undefined;
  /** For the database opened on first use (required then): the instance id. */
  instanceId?: string | undefined;
  /** For the database opened on first use (required then): the database id. */
  databaseId?: string | undefined;
  /**
   * Table of the records: a GoogleSQL identifier (a letter, then letters, digits and `_`, at
   * most 128); default `idempotency_records`. Create it with `ensureSchema()` or
   * {@link SpannerLock.schemaDdl}.
   */
  table?: string | undefined;
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to `MAX_TTL_MS` (10 years);
   * default {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number | undefined;
  /** Bounds on retrying ABORTED (contention) / UNAVAILABLE / DEADLINE_EXCEEDED. */
  retry?: RetryOptions | undefined;
  /**
   * How records are named. `"spread"` (default): a 4-hex-digit hash of the key before it
   * (`3f0a~orders:42`), so rising keys spread over the key space instead of hotspotting one
   * split. `"plain"`: 0.1's ids (`orders:42`), for rows (the `key` column) 0.1 instances still write.
   * `"migrating"`: spread, reading a key's plain id too when its spread one is absent, for
   * one ttl after the last plain writer stopped. See docs/capacity.md.
   */
  recordIds?: RecordIdLayout | undefined;
}

/** A table name: a GoogleSQL identifier. */
const TABLE_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,127}$/;
/** An instance id: a lowercase letter, then lowercase letters, digits and hyphens (2 to 64). */
const INSTANCE_PATTERN = /^[a-z][a-z0-9-]{0,62}[a-z0-9]$/;

/**
 * Cloud Spanner as the store. Every call is one read-write transaction of two round trips:
 * a query, which begins the transaction inline and reads the record together with Spanner's
 * clock (`CURRENT_TIMESTAMP()`), then a commit carrying the write the transition table
 * decides (or a rollback when there is none: a duplicate or a held key).
 *
 * Time is Spanner's (TrueTime), never this process's: leases are set from the time the
 * transaction read, and a won claim whose commit timestamp falls after its own lease (a
 * commit that waited that long) answers held instead of handing the body a lapsed lease.
 *
 * Records are deleted only after `expires_at`: the shipped DDL ({@link SpannerLock.schemaDdl})
 * carries a row deletion policy on that column, so Spanner reaps them in the background;
 * `purgeExpired()` deletes them at once, in batches of 500 (each one read-write transaction).
 *
 * The constructor does no I/O; without a `database` of yours it starts importing @google-cloud/spanner, and
 * when that package is not installed a surface built over the lock logs one ERROR line at
 * once, and every call rejects with an `InvalidConfiguration` naming `npm install @google-cloud/spanner`.
 * Store failures reject with a {@link BackendError} once the
 * transient ones (ABORTED contention among them) have been retried (see {@link RetryOptions}).
 *
 * {@link gcp-pubsub-idempotency!lockInTransaction} runs its body in a read-write transaction and completes the claim
 * in it (see {@link SpannerLock.completeInTransaction}); give the type of your `Transaction`
 * as the type parameter to have the body's `tx` typed as the driver's own.
 *
 * @example
 * ```ts
 * import { lock } from "gcp-pubsub-idempotency";
 * import { SpannerLock } from "gcp-pubsub-idempotency/spanner";
 *
 * // The database is opened on first use: ADC, or SPANNER_EMULATOR_HOST.
 * const backend = new SpannerLock({ instanceId: "main", databaseId: "orders" });
 * await backend.ensureSchema(); // once, or apply backend.schemaDdl with your migrations
 * await lock("orders/4711", { backend }, async () => {});
 * await backend.close();
 * ```
 */
export class SpannerLock<Tx extends SpannerTransactionLike = SpannerTransactionLike>
  implements TransactionalLockBackend<Tx>
{
  /** Table of the records. */
  readonly table: string;
  /** How long a DONE key suppresses duplicates, in ms. */
  readonly ttlMs: number;
  /** How the records are named (the `recordIds` option). */
  readonly recordIds: RecordIdLayout;
  /**
   * Results up to 2,621,440 UTF-8 bytes and fingerprints, kept in the nullable `result` and
   * `fingerprint` columns (`STRING(MAX)`), the result in the same commit as DONE. A table made
   * by 0.1 gets the columns from `ensureSchema()` or {@link SpannerLock.upgradeDdl}.
   */
  readonly supports: BackendSupport = {
    results: true,
    fingerprints: true,
    maxResultBytes: SPANNER_MAX_RESULT_BYTES,
  };
  private readonly database: () => Promise<SpannerDatabaseLike>;
  private readonly records: GoogleRecords<SpannerDatabaseLike, SpannerTransactionLike>;

  /**
   * Checks every option before any I/O (see {@link SpannerLockOptions}): a value of the wrong
   * type or out of range throws `InvalidConfiguration` naming the option.
   */
  constructor(options: SpannerLockOptions<Tx> = {}) {
    const driver = loadOnce(() =>
      importPeer(
        "SpannerLock",
        "@google-cloud/spanner",
        () => import("@google-cloud/spanner"),
      ).then((module) => module as unknown as SpannerModule),
    );
    // The client of the database opened on first use, closed with it.
    const opened = new WeakMap<SpannerDatabaseLike, { close(): unknown }>();
    let instanceId: string | undefined;
    const setup = googleLockOptions(
      "SpannerLock",
      options,
      {
        option: "database",
        methods: ["getTransaction"],
        what: "a @google-cloud/spanner Database",
        create: async ({ databaseId, ...settings }) => {
          const spanner = new (await driver()).Spanner(settings);
          const database = spanner.instance(String(instanceId)).database(String(databaseId));
          opened.set(database, spanner);
          return database;
        },
      },
      ["instanceId", "table"],
    );
    instanceId = nameOption(
      "instanceId",
      setup.own.instanceId,
      64,
      INSTANCE_PATTERN,
      "an instance id (2 to 64 lowercase letters, digits and hyphens, starting with a letter)",
    );
    if (options.database === undefined && (instanceId === undefined || !options.databaseId)) {
      throw new InvalidConfiguration(
        "SpannerLock needs a database, or an instanceId and a databaseId to open one",
      );
    }
    this.table =
      nameOption(
        "table",
        setup.own.table,
        128,
        TABLE_PATTERN,
        "a GoogleSQL identifier (a letter, then letters, digits and _, at most 128)",
      ) ?? "idempotency_records";
    this.ttlMs = setup.ttlMs;
    this.database = () => setup.client.get();
    this.recordIds = setup.recordIds;
    const io = new SpannerIo(
      this.table,
      recordIds(
        setup.recordIds,
        (key) => key,
        (key) => key,
      ),
      (database) => opened.get(database)?.close(),
      // The driver is installed wherever a database of it was given; if not, a transaction.
      () =>
        driver().then(
          (module) => module.MutationSet,
          () => undefined,
        ),
    );
    this.records = new GoogleRecords(io, setup);
    if (new.target === SpannerLock) offerTrustedPort(this, this.records.port());
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

  /** The DDL of the records table (`schema.sql`, shipped): for your own migrations. */
  get schemaDdl(): string {
    return renderSchema(this.table);
  }

  /**
   * The DDL that brings a records table made by 0.1 up to {@link SpannerLock.schemaDdl}
   * (`upgrade.sql`, shipped): one `ALTER TABLE … ADD COLUMN IF NOT EXISTS` per new nullable
   * column (`fingerprint`, `result`), a no-op where the column exists. For your own
   * migrations, e.g. `database.updateSchema(backend.upgradeDdl)`; `ensureSchema()` applies it.
   */
  get upgradeDdl(): string[] {
    return renderUpgrade(this.table);
  }

  /**
   * Create the records table (with its row deletion policy) if it does not exist, and add the
   * columns a table made by 0.1 lacks ({@link SpannerLock.upgradeDdl}), in one
   * `database.updateSchema`: a schema change takes seconds to minutes, so run it at deploy
   * time, not per instance start. The rows of an upgraded table stay as they are (records
   * without a fingerprint or a result).
   */
  ensureSchema(): Promise<void> {
    return callStore("spanner", "ensureSchema", undefined, async () => {
      const database = await this.database();
      if (typeof database.updateSchema !== "function") {
        throw new InvalidConfiguration("ensureSchema needs a database with updateSchema()");
      }
      const [operation] = await database.updateSchema([this.schemaDdl, ...this.upgradeDdl]);
      await operation.promise();
    });
  }

  /**
   * Run `body` in a read-write transaction, then complete the record in that same
   * transaction when the fence matches: the body's writes and DONE commit together. The
   * record is read after the body, so a long body holds no lock on it. A stale fence rolls
   * back (`completed: false`); a body that throws rolls back and rejects with its error; a
   * failed commit rejects with a {@link BackendError}.
   *
   * Like any Spanner transaction function, the body may run more than once (an ABORTED
   * commit, contention on what it reads, a lost commit reply): keep it free of effects
   * outside `tx`. A retry that finds its earlier commit landed does not commit again.
   * {@link gcp-pubsub-idempotency!lockInTransaction} calls it; you rarely do.
   *
   * @example
   * ```ts
   * import { Spanner, type Transaction } from "@google-cloud/spanner";
   * import { lockInTransaction } from "gcp-pubsub-idempotency";
   * import { SpannerLock } from "gcp-pubsub-idempotency/spanner";
   *
   * const database = new Spanner().instance("main").database("orders");
   * const backend = new SpannerLock<Transaction>({ database });
   * await lockInTransaction("orders:4711", { backend }, async (tx) => {
   *   // tx is the driver's Transaction: this insert commits with the key's DONE.
   *   await tx.runUpdate({ sql: "INSERT INTO orders (id, total) VALUES ('4711', 99)" });
   * });
   * ```
   */
  async completeInTransaction<T>(
    claim: Claim,
    body: (tx: Tx) => Promise<T>,
  ): Promise<TransactionCompletion<T>> {
    assertValidKey(claim.key);
    return this.records.completeInTransaction(
      claim,
      body as (tx: SpannerTransactionLike) => Promise<T>,
    );
  }

  /**
   * Delete the records past their expiry at once, for what the row deletion policy has not
   * reaped yet: 500 per read-write transaction, each record judged again as it is deleted,
   * so one reclaimed since the query is left alone.
   */
  purgeExpired(options?: PurgeOptions): Promise<number> {
    return this.records.purgeExpired(options);
  }

  /**
   * Closes the database (and its Spanner client) if the lock opened it; a given one stays
   * open. A later call opens a new one.
   */
  close(): Promise<void> {
    return this.records.close();
  }

  // Operator calls (the CLI's inspect and release), in Spanner's clock.

  /** The record of `key` as stored, and Spanner's time; see {@link LockBackend.inspect}. */
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
