// The record as DatastoreLock and FirestoreLock store it: an entity or a document (SpannerLock
// keeps rows of its own, spanner/io.ts), the per-claim token in it, and the fields a write
// changes beyond the lease (the fingerprint and the result, which Firestore and Spanner write
// only when they change).
import { randomBytes } from "node:crypto";
import type { LockRecord } from "../../core/transitions.js";

/**
 * The largest result DatastoreLock and FirestoreLock keep, in UTF-8 bytes. An entity or a
 * document is at most 1 MiB (1,048,572 bytes for a Datastore entity, 1,048,576 for a Firestore
 * document) and one string value at most 1,048,487 bytes; the rest of a record is its name
 * (kind or collection up to 1,500 bytes, the encoded key up to 1,368), the key in clear and the
 * fingerprint (each up to 1,024), the token, four numbers and the field names: under 6 KiB.
 * 1,000,000 leaves over 40 KiB of that room.
 */
export const DOCUMENT_MAX_RESULT_BYTES = 1_000_000;

/**
 * A record as an entity or document. `expiresAt` is a timestamp so a TTL policy on it can reap
 * the record; `key` is the idempotency key in clear, for a human reading the console. The
 * fingerprint and the result are there only when the record has them (Firestore may keep a
 * `null` where an update cleared one).
 */
export interface StoredRecord {
  key: string;
  state: "claimed" | "done";
  fencingId: number;
  leaseExpiresAt: number;
  expiresAt: Date;
  token: string;
  fingerprint?: string;
  result?: string;
}

/** The stored form of `record`, the record of `key`: the fields it has, none undefined. */
export function toStored(key: string, record: LockRecord): StoredRecord {
  const stored: StoredRecord = {
    key,
    state: record.state,
    fencingId: record.fencingId,
    leaseExpiresAt: record.leaseExpiresAt,
    expiresAt: new Date(record.expiresAt),
    token: record.token ?? "",
  };
  if (record.fingerprint !== undefined) stored.fingerprint = record.fingerprint;
  if (record.result !== undefined) stored.result = record.result;
  return stored;
}

/** The record in stored fields: `expiresAt` a Date (Datastore) or a Timestamp (Firestore). */
export function fromStored(data: Record<string, unknown> | undefined): LockRecord | undefined {
  if (data === undefined) return undefined;
  const expiresAt = data.expiresAt as { toMillis?: () => number } | Date | undefined;
  const record: LockRecord = {
    state: data.state === "done" ? "done" : "claimed",
    fencingId: Number(data.fencingId),
    leaseExpiresAt: Number(data.leaseExpiresAt),
    expiresAt:
      expiresAt instanceof Date ? expiresAt.getTime() : Number(expiresAt?.toMillis?.() ?? 0),
    token: String(data.token),
  };
  return withFields(record, data.fingerprint, data.result);
}

/**
 * `record` with the fingerprint and result read from the store: a string is kept, anything
 * else (absent, `null`) means none. Returns `record` itself when it has neither.
 */
export function withFields(record: LockRecord, fingerprint: unknown, result: unknown): LockRecord {
  const hasFingerprint = typeof fingerprint === "string";
  const hasResult = typeof result === "string";
  if (!hasFingerprint && !hasResult) return record;
  return {
    ...record,
    ...(hasFingerprint ? { fingerprint } : {}),
    ...(hasResult ? { result } : {}),
  };
}

/**
 * The fingerprint and result a write of `next` over `previous` changes, for a store whose
 * write keeps the fields it is not given (a Firestore `update`, a Spanner insert-or-update): a
 * new value as is, a cleared one as `null`, an unchanged one left out. A write that changes
 * neither (a lock() without a fingerprint, a renew, a release) sends what it sent before
 * these fields existed.
 */
export function changedFields(
  previous: LockRecord | undefined,
  next: LockRecord,
): { fingerprint?: string | null; result?: string | null } {
  const changes: { fingerprint?: string | null; result?: string | null } = {};
  if (next.fingerprint !== previous?.fingerprint) changes.fingerprint = next.fingerprint ?? null;
  if (next.result !== previous?.result) changes.result = next.result ?? null;
  return changes;
}

/** A per-claim random token: lets a retried claim recognise its own landed write. */
export function newToken(): string {
  return randomBytes(12).toString("base64url");
}
