// SqlLock's calls as statements on its client: each verb's statements kept out of a transaction
// open on a single connection, a busy claim retried, failures wrapped, rows read as outcomes.
// SqlLock checks the arguments, so nothing here checks them again.
import { randomUUID } from "node:crypto";
import type {
  Claim,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  PurgeOptions,
  TransactionalLockBackend,
  TransactionCompletion,
} from "../../core/port.js";
import { type RetryPolicy, withRetry } from "../../core/retry.js";
import { forceReleaseTransition, type LockRecord } from "../../core/transitions.js";
import { purgeInBatches } from "../shared/purge.js";
import { callStore, callStoreWithBody } from "../shared/store-call.js";
import { type ConnectionGate, gateFor } from "./connection-gate.js";
import type { Dialect, DialectSession, OpenTransaction, SqlInspectRow, SqlRow } from "./dialect.js";
import { PURGE_BATCH } from "./table.js";
import type { SqlClient, SqlDialect } from "./types.js";

/**
 * Claim retries of a deadlock, serialization failure or busy database: 5 attempts, pauses
 * averaging 5 to 40 ms. No time bound: a busy SQLite file waits its busy_timeout per attempt.
 */
const CLAIM_RETRY: RetryPolicy = {
  attempts: 5,
  baseDelayMs: 10,
  maxDelayMs: 80,
  maxElapsedMs: Number.POSITIVE_INFINITY,
};

/** The statements of one SqlLock: its dialect bound to its client and rendered statements. */
export class SqlStatements<Tx> {
  /** The backend a BackendError names: the dialect. */
  private readonly backend: SqlDialect;
  private readonly session: DialectSession;
  private readonly isTransient: (error: unknown) => boolean;
  private readonly isUnknownColumn: (error: object) => boolean;
  /** On one connection: keeps statements out of an open transaction. None for a pool. */
  private readonly gate: ConnectionGate | undefined;

  constructor(
    dialect: Dialect,
    client: SqlClient,
    private readonly sql: Readonly<Record<string, string>>,
    private readonly ttlMs: number,
  ) {
    this.backend = dialect.name;
    this.isTransient = (error) =>
      error !== null && typeof error === "object" && dialect.isTransient(error);
    this.isUnknownColumn = (error) => dialect.isUnknownColumn(error);
    this.session = dialect.open(client, (name) => this.text(name));
    this.gate = this.session.sharedConnection ? gateFor(client) : undefined;
  }

  /** The port methods, for the lock to offer as its trusted port. */
  port(): TransactionalLockBackend<Tx> {
    return {
      claim: (key, leaseMs, options) => this.claim(key, leaseMs, options?.fingerprint),
      complete: (claim, result) => this.complete(claim, result),
      release: (claim) => this.release(claim),
      renew: (claim, leaseMs) => this.renew(claim, leaseMs),
      completeInTransaction: (claim, body) => this.completeInTransaction(claim, body),
    };
  }

  /** The rendered statement `name`. */
  text(name: string): string {
    const text = this.sql[name];
    if (text === undefined) throw new Error(`no ${this.backend} statement ${name}`);
    return text;
  }

  async ensureSchema(): Promise<void> {
    await callStore(this.backend, "ensureSchema", undefined, () =>
      this.statement(() => this.session.ensureSchema()),
    );
  }

  /** A deadlock, serialization failure or busy database is retried with a jittered backoff. */
  claim(key: string, leaseMs: number, fingerprint?: string): Promise<ClaimOutcome> {
    return callStore(this.backend, "claim", key, () =>
      withRetry(CLAIM_RETRY, this.isTransient, () =>
        this.statement(() => this.claimOnce(key, leaseMs, fingerprint)),
      ),
    );
  }

  /** The result, when given, lands in the same statement that sets done. */
  complete({ key, fencingId }: Claim, result?: string): Promise<boolean> {
    return callStore(this.backend, "complete", key, () =>
      this.statement(() => this.session.complete(key, fencingId, this.ttlMs, result)),
    );
  }

  async release({ key, fencingId }: Claim): Promise<void> {
    await callStore(this.backend, "release", key, () =>
      this.statement(() => this.session.release(key, fencingId, this.ttlMs)),
    );
  }

  renew({ key, fencingId }: Claim, leaseMs: number): Promise<boolean> {
    return callStore(this.backend, "renew", key, () =>
      this.statement(() => this.session.renew(key, fencingId, leaseMs, this.ttlMs)),
    );
  }

  purgeExpired(options?: PurgeOptions): Promise<number> {
    return callStore(this.backend, "purgeExpired", undefined, () =>
      purgeInBatches(
        PURGE_BATCH,
        async () => {
          const removed = await this.statement(() => this.session.purgeBatch());
          return { found: removed, deleted: removed };
        },
        options?.onProgress,
      ),
    );
  }

  /** BEGIN, the body, the fenced complete, COMMIT (or ROLLBACK); see SqlLock's doc. */
  completeInTransaction<T>(
    { key, fencingId }: Claim,
    body: (tx: Tx) => Promise<T>,
  ): Promise<TransactionCompletion<T>> {
    return callStoreWithBody(this.backend, "completeInTransaction", key, body, (watched) =>
      this.transaction(async () => {
        // Busy or deadlocked before anything ran: safe to try again.
        const open = await withRetry(CLAIM_RETRY, this.isTransient, () => this.session.begin());
        let value: T;
        try {
          value = await watched(open.tx as Tx);
        } catch (error) {
          await abandon(open);
          throw error;
        }
        try {
          const completed = await open.complete(key, fencingId, this.ttlMs);
          // Fenced out: the reclaimer's run counts, so none of this one's writes may land.
          if (completed) await open.commit();
          else await open.rollback();
          open.end();
          return { completed, value };
        } catch (error) {
          await abandon(open);
          throw error;
        }
      }),
    );
  }

  close(): void {
    this.session.close();
  }

  // Operator calls (the CLI's inspect and release).

  async inspect(key: string): Promise<InspectedRecord | undefined> {
    const { record, now } = await callStore(this.backend, "inspect", key, () =>
      this.statement(() => this.readRecord(key)),
    );
    return record === undefined ? undefined : { key, ...record, now };
  }

  /** One release statement with the operator's fence; when it changes nothing, a read says why. */
  forceRelease(key: string, fencingId: number): Promise<ForceReleaseOutcome> {
    // Both statements (the release, and the read that explains a no-op) stay out of any
    // transaction open on a single connection, like every other verb's.
    return callStore(this.backend, "forceRelease", key, () =>
      this.statement(async (): Promise<ForceReleaseOutcome> => {
        if (await this.session.forceRelease(key, fencingId, this.ttlMs)) {
          return { status: "released", fencingId: fencingId + 1 };
        }
        const { record, now } = await this.readRecord(key);
        const { answer } = forceReleaseTransition(record, now, { fencingId, ttlMs: this.ttlMs });
        // Released by nobody, yet releasable now: a purge and a fresh claim reached the same fence.
        return answer.status === "released" ? { status: "changed", fencingId } : answer;
      }),
    );
  }

  private async readRecord(key: string): Promise<{ record: LockRecord | undefined; now: number }> {
    let row: SqlInspectRow | undefined;
    try {
      row = await this.session.inspect(key);
    } catch (error) {
      throw this.explained(error);
    }
    if (row === undefined) throw new Error("the inspect statement returned no row");
    const now = toNumber(row.now, "now");
    if (row.state === null || row.state === undefined) return { record: undefined, now };
    if (row.state !== "claimed" && row.state !== "done") {
      throw new Error(`the record has an unknown state ${JSON.stringify(row.state)}`);
    }
    const record: LockRecord = {
      state: row.state,
      fencingId: toNumber(row.fencing_id, "fencing_id"),
      leaseExpiresAt: toNumber(row.lease_expires_at, "lease_expires_at"),
      expiresAt: toNumber(row.expires_at, "expires_at"),
      ...storedFields(row),
    };
    return { record, now };
  }

  /** One claim statement (or the dialect's few); the token in the row tells who won. */
  private async claimOnce(
    key: string,
    leaseMs: number,
    fingerprint: string | undefined,
  ): Promise<ClaimOutcome> {
    const token = randomUUID();
    let row: SqlRow | undefined;
    try {
      row = await this.session.claim(key, leaseMs, this.ttlMs, token, fingerprint);
    } catch (error) {
      // Every call starts with a claim: here a table made by 0.1 is told what it lacks.
      throw this.explained(error);
    }
    if (row === undefined) throw new Error("the claim returned no row (purged mid-claim?)");
    const leaseExpiresAt = toNumber(row.lease_expires_at, "lease_expires_at");
    if (row.token === token) {
      return {
        status: "won",
        claim: { key, fencingId: toNumber(row.fencing_id, "fencing_id"), leaseExpiresAt },
      };
    }
    if (row.state === "done") return { status: "done", ...storedFields(row) };
    const stored = text(row.fingerprint, "fingerprint");
    return stored === undefined
      ? { status: "held", leaseExpiresAt }
      : { status: "held", leaseExpiresAt, fingerprint: stored };
  }

  /**
   * A driver's error, or, when it is an unknown `fingerprint` or `result` column (a table
   * made by 0.1, not upgraded), an error saying what to run, with the driver's as its cause.
   */
  private explained(error: unknown): unknown {
    if (error === null || typeof error !== "object" || !this.isUnknownColumn(error)) return error;
    const message = String((error as { message?: unknown }).message);
    if (!/\b(fingerprint|result)\b/.test(message)) return error;
    return new Error(
      `the table lacks the fingerprint and result columns (a table made by 0.1): run ensureSchema() or apply upgradeSql (${message})`,
      { cause: error },
    );
  }

  /** Run one verb's statements, outside any transaction open on a single connection. */
  private statement<R>(run: () => Promise<R>): Promise<R> {
    return this.gate === undefined ? run() : this.gate.statement(run);
  }

  /** Run a transaction; on a single connection, alone on it. */
  private transaction<R>(run: () => Promise<R>): Promise<R> {
    return this.gate === undefined ? run() : this.gate.transaction(run);
  }
}

/**
 * End a transaction that must not commit: roll back, then give the connection back, or have
 * the pool discard it when even the rollback failed (the connection is likely broken).
 */
async function abandon(open: OpenTransaction): Promise<void> {
  try {
    await open.rollback();
    open.end();
  } catch (rollbackError) {
    open.end(rollbackError);
  }
}

/** The fingerprint and result a row holds, each only when it is not null. */
function storedFields(row: { fingerprint?: unknown; result?: unknown }): {
  fingerprint?: string;
  result?: string;
} {
  const fields: { fingerprint?: string; result?: string } = {};
  const fingerprint = text(row.fingerprint, "fingerprint");
  if (fingerprint !== undefined) fields.fingerprint = fingerprint;
  const result = text(row.result, "result");
  if (result !== undefined) fields.result = result;
  return fields;
}

/** A nullable text column: undefined for null. */
function text(value: unknown, column: string): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value !== "string") throw new Error(`${column} is not text: ${typeof value}`);
  return value;
}

/** pg returns int8 as a string, mysql2 may too: bring every BIGINT back as a safe number. */
function toNumber(value: unknown, column: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n))
    throw new Error(`${column} is not a safe integer: ${String(value)}`);
  return n;
}
