// How SpannerLock reads and writes records: one read-write transaction per call, its read
// (read.sql) taking Spanner's clock with the record, its write a buffered mutation sent with
// the commit. What to write is the transition table's to decide (core/transitions.ts).

import type { ClaimOutcome, TransactionCompletion } from "../../core/port.js";
import {
  type Decide,
  type LockRecord,
  purgeTransition,
  unlessLapsed,
} from "../../core/transitions.js";
import { GRPC, grpcCode } from "../google/grpc.js";
import type { RecordIds } from "../google/record-ids.js";
import type { RecordIo, Retrying } from "../google/record-io.js";
import { changedFields, withFields } from "../google/stored-record.js";
import type { PurgeBatch } from "../shared/purge.js";
import type {
  SpannerCommitResponseLike,
  SpannerDatabaseLike,
  SpannerMutationSetLike,
  SpannerTransactionLike,
} from "./client.js";
import expiredSql from "./expired.sql";
import readSql from "./read.sql";
import readMigratingSql from "./read-migrating.sql";
import schemaSql from "./schema.sql";
import upgradeSql from "./upgrade.sql";

const PURGE_BATCH = 500;

/**
 * The largest result SpannerLock keeps, in UTF-8 bytes: a `STRING(MAX)` value is at most
 * 2,621,440 Unicode characters and 10 MiB (https://cloud.google.com/spanner/quotas#tables, and
 * the migration guide's "Spanner supports up to 2,621,440 characters",
 * https://cloud.google.com/spanner/docs/migrate-mysql-schema). A character is at least one
 * UTF-8 byte, so a result within this many bytes is within both.
 */
export const SPANNER_MAX_RESULT_BYTES = 2_621_440;

/** The record's columns as read.sql and expired.sql return them (nulls for no record). */
interface RecordRow {
  now: unknown;
  state: unknown;
  fencing_id: unknown;
  lease_expires_at: unknown;
  expires_at: unknown;
  token: unknown;
  /** Not read by expired.sql: a purge needs neither. */
  fingerprint?: unknown;
  result?: unknown;
  key?: unknown;
  /** The row's id, read by read-migrating.sql only. */
  id?: unknown;
}

/** A record as read: it, the time read at, and the plain id it was found under (migrating). */
type Found = [record: LockRecord | undefined, now: number, legacy: string | undefined];

/** The DDL of the records table `table`: `schema.sql` without its header (DDL takes no comments). */
export function renderSchema(table: string): string {
  return render(withoutComments(schemaSql), table).trim();
}

/** The statements of `upgrade.sql` for table `table`: the columns 0.1's table lacks. */
export function renderUpgrade(table: string): string[] {
  return withoutComments(render(upgradeSql, table))
    .split(";")
    .map((statement) => statement.trim())
    .filter((statement) => statement !== "");
}

/** The SQL without its `--` comment lines. */
function withoutComments(sql: string): string {
  return sql.replace(/^--.*\n/gm, "");
}

/**
 * How SpannerLock reads and writes records: every call is one read-write transaction, begun
 * inline by its one query (the record and `CURRENT_TIMESTAMP()`), then either a commit
 * carrying the write or a rollback when there is none. The query locks the row until then,
 * so a concurrent writer aborts one of the two and the loser is retried from the read.
 */
export class SpannerIo implements RecordIo<SpannerDatabaseLike, SpannerTransactionLike> {
  readonly backend = "spanner";
  readonly purgeBatchSize = PURGE_BATCH;
  private readonly readSql: string;
  private readonly readMigratingSql: string;
  private readonly expiredSql: string;

  /**
   * `closeClient`: whatever else to close with a database the lock opened itself.
   * `mutationSet`: the driver's MutationSet, for an absent key's one-call claim (none: a
   * transaction).
   */
  constructor(
    private readonly table: string,
    private readonly ids: RecordIds,
    private readonly closeClient: (database: SpannerDatabaseLike) => unknown = () => undefined,
    private readonly mutationSet: () => Promise<
      (new () => SpannerMutationSetLike) | undefined
    > = async () => undefined,
  ) {
    this.readSql = render(readSql, table);
    this.readMigratingSql = render(readMigratingSql, table);
    this.expiredSql = render(expiredSql, table);
  }

  /**
   * A claim, judged at its commit: a win whose commit came after its own lease ended (a
   * commit that waited out the lease behind contention) answers held, and the record,
   * claimed with a lapsed lease, is reclaimed at fence + 1 by the redelivery.
   */
  async claim(
    database: SpannerDatabaseLike,
    key: string,
    decide: Decide<ClaimOutcome>,
  ): Promise<ClaimOutcome> {
    const quick = await this.claimWithoutTransaction(database, key, decide);
    if (quick !== undefined) return quick;
    const { answer, committedAt } = await this.transact(database, key, decide);
    return committedAt === undefined ? answer : unlessLapsed(answer, committedAt);
  }

  /**
   * The claim in one call where no transaction is needed: a strong single-use read answers a
   * done or held key (and a retry's own landed win), and an absent key is taken with an insert
   * committed alone, which Spanner refuses with ALREADY_EXISTS if the key was created since (a
   * replayed insert of ours too: the transaction then finds our token). Undefined: run the
   * transaction (a reclaim, a race, or a database without these calls).
   */
  private async claimWithoutTransaction(
    database: SpannerDatabaseLike,
    key: string,
    decide: Decide<ClaimOutcome>,
  ): Promise<ClaimOutcome | undefined> {
    const run = database.run?.bind(database);
    if (run === undefined) return undefined;
    const [record, now] = await this.read(run, key);
    const { answer, write } = decide(record, now);
    if (write === undefined) return answer;
    if (record !== undefined || database.writeAtLeastOnce === undefined) return undefined;
    const MutationSet = await this.mutationSet();
    if (MutationSet === undefined) return undefined;
    const mutations = new MutationSet();
    mutations.insert(this.table, toRow(this.ids.home(key), write, undefined));
    try {
      const committedAt = commitMillis(await database.writeAtLeastOnce(mutations));
      return committedAt === undefined ? answer : unlessLapsed(answer, committedAt);
    } catch (error) {
      if (grpcCode(error) === GRPC.ALREADY_EXISTS) return undefined;
      throw error;
    }
  }

  async update<A>(database: SpannerDatabaseLike, key: string, decide: Decide<A>): Promise<A> {
    return (await this.transact(database, key, decide)).answer;
  }

  /**
   * The body, then the record read in the same transaction (its lock taken only now, so a
   * long body holds none on the record) and DONE written with the body's writes when the
   * fence matches. A reclaim between the read and the commit aborts one of the two; an
   * aborted attempt is retried whole, body included. Fenced out, or found done at this fence
   * (an earlier attempt whose commit reply was lost), the transaction is rolled back.
   */
  completeInTransaction<T>(
    database: SpannerDatabaseLike,
    key: string,
    body: (tx: SpannerTransactionLike) => Promise<T>,
    decide: Decide<boolean>,
    retrying: Retrying,
  ): Promise<TransactionCompletion<T>> {
    return retrying(() =>
      inTransaction(database, async (tx) => {
        const value = await body(tx);
        const found = await this.read((query) => tx.run(query), key);
        const { row, answer, write } = decide(found[0], found[1]);
        if (row !== "complete.claimed" || write === undefined) {
          await tx.rollback();
          return { completed: answer, value };
        }
        this.write(tx, key, write, found);
        await tx.commit();
        return { completed: true, value };
      }),
    );
  }

  /** One batch: the expired rows read and locked, each judged by purgeTransition, deleted. */
  purgeBatch(database: SpannerDatabaseLike, retrying: Retrying): Promise<PurgeBatch> {
    return retrying(() =>
      inTransaction(database, async (tx) => {
        const [rows] = await tx.run({
          sql: this.expiredSql,
          params: { batch: PURGE_BATCH },
          json: true,
        });
        const doomed: string[] = [];
        for (const row of rows as RecordRow[]) {
          const [record, now] = fromRow(row);
          if (purgeTransition(record, now).write === "delete") doomed.push(String(row.key));
        }
        if (doomed.length === 0) {
          await tx.rollback();
        } else {
          tx.deleteRows(this.table, doomed);
          await tx.commit();
        }
        return { found: rows.length, deleted: doomed.length };
      }),
    );
  }

  async end(database: SpannerDatabaseLike): Promise<void> {
    await database.close?.();
    await this.closeClient(database);
  }

  /** Read, decide, and commit the write (or roll back when there is none). */
  private transact<A>(
    database: SpannerDatabaseLike,
    key: string,
    decide: Decide<A>,
  ): Promise<{ answer: A; committedAt?: number | undefined }> {
    return inTransaction(database, async (tx) => {
      const found = await this.read((query) => tx.run(query), key);
      const { answer, write } = decide(found[0], found[1]);
      if (write === undefined) {
        await tx.rollback();
        return { answer };
      }
      this.write(tx, key, write, found);
      return { answer, committedAt: commitMillis(await tx.commit()) };
    });
  }

  /**
   * The record of `key` (or none) and Spanner's time, read with `run` (a transaction's, locking
   * the row, or a single-use read): at its home id, or, migrating, at its plain id when the
   * home holds none. On a table made by 0.1, which lacks the columns read.sql names, the
   * error says what to run.
   */
  private async read(run: RunQuery, key: string): Promise<Found> {
    const home = this.ids.home(key);
    const plain = this.ids.legacy(key);
    if (plain === undefined) {
      const [rows] = await this.orUpgradeHint(() =>
        run({ sql: this.readSql, params: { key: home }, json: true }),
      );
      return [...fromRow(rows[0] as RecordRow), undefined];
    }
    const [rows] = await this.orUpgradeHint(() =>
      run({ sql: this.readMigratingSql, params: { key: home, plain }, json: true }),
    );
    const found = rows as RecordRow[];
    const row = found.find((r) => r.id === home) ?? found.find((r) => r.id === plain) ?? found[0];
    const [record, now] = fromRow(row as RecordRow);
    return [record, now, record !== undefined && row?.id === plain ? plain : undefined];
  }

  /** Buffer `record`'s write at its home id; one found at its plain id moves there. */
  private write(tx: SpannerTransactionLike, key: string, record: LockRecord, found: Found): void {
    const [previous, , legacy] = found;
    if (legacy !== undefined) tx.deleteRows(this.table, [legacy]);
    // A moved record is a new row: every column of it is written.
    tx.upsert(
      this.table,
      toRow(this.ids.home(key), record, legacy === undefined ? previous : undefined),
    );
  }

  /** `read`'s failure, saying what to run when the table was made by 0.1. */
  private async orUpgradeHint<R>(read: () => Promise<R>): Promise<R> {
    try {
      return await read();
    } catch (error) {
      throw lacksColumns(error, this.table) ?? error;
    }
  }
}

/**
 * Run `work` in a read-write transaction; on any failure roll it back (quietly: an attempt
 * that never began has nothing to roll back) and rethrow. The session is given back either way.
 */
async function inTransaction<R>(
  database: SpannerDatabaseLike,
  work: (tx: SpannerTransactionLike) => Promise<R>,
): Promise<R> {
  const [tx] = await database.getTransaction();
  try {
    return await work(tx);
  } catch (error) {
    await tx.rollback().catch(() => undefined);
    throw error;
  } finally {
    tx.end();
  }
}

/** A query of read.sql's kind, run by a transaction or as a single-use read. */
type RunQuery = (query: {
  sql: string;
  params: Record<string, string>;
  json: true;
}) => Promise<readonly [unknown[], ...unknown[]]>;

/** The record of a read.sql / expired.sql row, and the time it was read at. */
function fromRow(row: RecordRow): [LockRecord | undefined, number] {
  const now = Number(row.now);
  if (row.state === null || row.state === undefined) return [undefined, now];
  const record: LockRecord = {
    state: row.state === "done" ? "done" : "claimed",
    fencingId: Number(row.fencing_id),
    leaseExpiresAt: Number(row.lease_expires_at),
    expiresAt: Number(row.expires_at),
    token: String(row.token),
  };
  return [withFields(record, row.fingerprint, row.result), now];
}

/**
 * The row of `record`, stored under `id`, written over `previous` (as read). An
 * insert-or-update keeps the columns it is not given, so `fingerprint` and `result` are in the
 * row only when they change (`null` clears one): a write that changes neither sends the
 * columns of 0.1, and a done record's result is never sent again.
 */
function toRow(
  id: string,
  record: LockRecord,
  previous: LockRecord | undefined,
): Record<string, unknown> {
  return {
    key: id,
    state: record.state,
    fencing_id: record.fencingId,
    lease_expires_at: record.leaseExpiresAt,
    expires_at: new Date(record.expiresAt),
    token: record.token ?? "",
    ...changedFields(previous, record),
  };
}

/**
 * An error that says what to run when `error` is Spanner refusing read.sql for a column 0.1's
 * table lacks (INVALID_ARGUMENT naming `fingerprint` or `result`); undefined for any other.
 */
function lacksColumns(error: unknown, table: string): Error | undefined {
  const message = error instanceof Error ? error.message : "";
  if (grpcCode(error) !== GRPC.INVALID_ARGUMENT || !/\b(?:fingerprint|result)\b/.test(message)) {
    return undefined;
  }
  return new Error(
    `${message} (table \`${table}\` was made by 0.1 and lacks the columns of fingerprints and ` +
      "results: run backend.ensureSchema(), or apply backend.upgradeDdl with your migrations)",
    { cause: error },
  );
}

/** The commit timestamp in epoch ms, if the reply carries one. */
function commitMillis(
  response: readonly [SpannerCommitResponseLike | undefined, ...unknown[]],
): number | undefined {
  const stamp = response[0]?.commitTimestamp;
  if (stamp === null || stamp === undefined) return undefined;
  return Number(stamp.seconds) * 1000 + Math.floor(Number(stamp.nanos ?? 0) / 1e6);
}

function render(template: string, table: string): string {
  // Quoted, so a table named like a keyword (`Order`) still parses.
  return template.replaceAll("{{table}}", `\`${table}\``);
}
