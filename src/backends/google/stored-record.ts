// The record as DatastoreLock and FirestoreLock store it: an entity or a document (SpannerLock
// keeps rows of its own, spanner/io.ts), and the per-claim token in it.
import { randomBytes } from "node:crypto";
import type { LockRecord } from "../../core/transitions.js";

/**
 * A record as an entity or document. `expiresAt` is a timestamp so a TTL policy on it can reap
 * the record; `key` is the idempotency key in clear, for a human reading the console.
 */
export interface StoredRecord {
  key: string;
  state: "claimed" | "done";
  fencingId: number;
  leaseExpiresAt: number;
  expiresAt: Date;
  token: string;
}

/** The stored form of `record`, the record of `key`. */
export function toStored(key: string, record: LockRecord): StoredRecord {
  return {
    key,
    state: record.state,
    fencingId: record.fencingId,
    leaseExpiresAt: record.leaseExpiresAt,
    expiresAt: new Date(record.expiresAt),
    token: record.token ?? "",
  };
}

/** The record in stored fields: `expiresAt` a Date (Datastore) or a Timestamp (Firestore). */
export function fromStored(data: Record<string, unknown> | undefined): LockRecord | undefined {
  if (data === undefined) return undefined;
  const expiresAt = data.expiresAt as { toMillis?: () => number } | Date | undefined;
  return {
    state: data.state === "done" ? "done" : "claimed",
    fencingId: Number(data.fencingId),
    leaseExpiresAt: Number(data.leaseExpiresAt),
    expiresAt:
      expiresAt instanceof Date ? expiresAt.getTime() : Number(expiresAt?.toMillis?.() ?? 0),
    token: String(data.token),
  };
}

/** A per-claim random token: lets a retried claim recognise its own landed write. */
export function newToken(): string {
  return randomBytes(12).toString("base64url");
}
