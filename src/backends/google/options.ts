// What DatastoreLock and FirestoreLock share besides the record engine (google-records.ts):
// the stored record, gRPC codes and the transient-error rule, the per-claim token, the client
// made on first use, and the options both take.
import { randomBytes } from "node:crypto";
import { DEFAULT_TTL_MS } from "../../core/constants.js";
import type { RetryPolicy } from "../../core/retry.js";
import type { LockRecord } from "../../core/transitions.js";
import { knownOptions, readOptions, stringOption, ttlOption } from "../../core/validate.js";
import { clientOption } from "../shared/options.js";
import { resolveRetry } from "./retry-options.js";

// --- the stored record ---------------------------------------------------------------------

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

// --- gRPC codes --------------------------------------------------------------------------

/** The gRPC status codes the two drivers reject with that we act on. */
export const GRPC = {
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  UNAVAILABLE: 14,
} as const;

/** The gRPC status code of a driver error, if it has one. */
export function grpcCode(error: unknown): unknown {
  return error !== null && typeof error === "object"
    ? (error as { code?: unknown }).code
    : undefined;
}

/**
 * Run a conditional write: true when it landed, false when the store refused it with one of
 * `refusals` (its condition did not hold: someone wrote first); any other error is rethrown.
 */
export async function conditionalWrite(
  refusals: readonly number[],
  write: () => Promise<unknown>,
): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (error) {
    if (refusals.includes(grpcCode(error) as number)) return false;
    throw error;
  }
}

const TRANSIENT_CODES = new Set<unknown>([GRPC.ABORTED, GRPC.UNAVAILABLE, GRPC.DEADLINE_EXCEEDED]);

/** Transient: contention (ABORTED), an unreachable server, or the emulator's lock timeout. */
export function isGoogleTransient(error: unknown): boolean {
  if (TRANSIENT_CODES.has(grpcCode(error))) return true;
  const message = error !== null && typeof error === "object" ? (error as Error).message : "";
  return typeof message === "string" && /lock timeout|too much contention/i.test(message);
}

// --- the client -------------------------------------------------------------------------

/**
 * `load` run on first use, its promise then shared; a rejection is not kept, so a failed
 * import (the driver not installed yet) is tried again by the next call.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  const forget = () => {
    pending = undefined;
  };
  return () => {
    if (pending === undefined) {
      pending = load();
      pending.catch(forget);
    }
    return pending;
  };
}

/** The client a lock was given, or the one it makes on first use and then owns. */
export class LazyClient<C> {
  private created: (() => Promise<C>) | undefined;

  constructor(
    private readonly given: C | undefined,
    private readonly create: () => Promise<C>,
  ) {}

  get(): Promise<C> {
    if (this.given !== undefined) return Promise.resolve(this.given);
    this.created ??= loadOnce(this.create);
    return this.created();
  }

  /** Ends, with `end`, a client this made; a given one stays open. The next get() makes anew. */
  async close(end: (client: C) => Promise<void>): Promise<void> {
    const created = this.created;
    if (created === undefined) return;
    this.created = undefined;
    const client = await created().catch(() => undefined);
    if (client !== undefined) await end(client);
  }
}

// --- options ------------------------------------------------------------------------------

/** A project id: printable ASCII without spaces (`my-project`, `example.com:my-project`). */
const PROJECT_PATTERN = /^[\x21-\x7e]{1,100}$/;
/** A database id: `(default)` or a lowercase name. */
const DATABASE_PATTERN = /^(?:\(default\)|[a-z][a-z0-9-]{0,62})$/;

/** How a lock takes its client: the option's name, what it must look like, how to make one. */
export interface GoogleClientSpec<C> {
  /** The option naming a client to use, e.g. `datastore`. */
  readonly option: string;
  /** Methods a given client must have. */
  readonly methods: readonly string[];
  /** What a given client should be, for the refusal. */
  readonly what: string;
  /** Make the client on first use, from the `projectId` / `databaseId` options. */
  readonly create: (settings: Readonly<Record<string, string>>) => Promise<C>;
}

/** The options both locks take, checked; plus the lock's own options, read but not checked. */
export interface GoogleLockSetup<C, K extends string> {
  readonly client: LazyClient<C>;
  /** Whether the caller gave a client (else one is made on first use, with the driver). */
  readonly clientGiven: boolean;
  readonly ttlMs: number;
  readonly retry: RetryPolicy;
  readonly own: { readonly [P in K]?: unknown };
}

/**
 * Read every option of a Google lock once (see `readOptions`) and check the shared ones: the
 * client, `projectId`, `databaseId`, `ttlMs` and `retry`. The lock checks `ownNames` itself.
 */
export function googleLockOptions<C, K extends string>(
  where: string,
  options: unknown,
  client: GoogleClientSpec<C>,
  ownNames: readonly K[],
): GoogleLockSetup<C, K> {
  const shared = ["projectId", "databaseId", "ttlMs", "retry"] as const;
  const names = [client.option, ...shared, ...ownNames];
  const read = readOptions(where, options, true, names, knownOptions(names, "backend")) as {
    readonly [P in string]?: unknown;
  };
  const given = clientOption<C>(client.option, read[client.option], client.methods, client.what);
  const settings: Record<string, string> = {};
  const projectId = stringOption(
    "projectId",
    read.projectId,
    PROJECT_PATTERN,
    "a project id (1 to 100 printable ASCII characters, no spaces)",
  );
  const databaseId = stringOption(
    "databaseId",
    read.databaseId,
    DATABASE_PATTERN,
    'a database id ("(default)", or lowercase letters, digits and hyphens, at most 63)',
  );
  if (projectId !== undefined) settings.projectId = projectId;
  if (databaseId !== undefined) settings.databaseId = databaseId;
  const own: { [P in K]?: unknown } = {};
  for (const name of ownNames) own[name] = read[name];
  return {
    client: new LazyClient(given, () => client.create(settings)),
    clientGiven: given !== undefined,
    ttlMs: ttlOption(read.ttlMs, DEFAULT_TTL_MS),
    retry: resolveRetry(read.retry, where),
    own,
  };
}
