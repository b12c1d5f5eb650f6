import { describe } from "./describe.js";

/**
 * Stable machine-readable codes, one per error class: match on `error.code` when
 * `instanceof` is unreliable (e.g. two copies of the package in one process).
 *
 * @example
 * ```ts
 * import { IdempotencyError, type IdempotencyErrorCode } from "gcp-pubsub-idempotency";
 *
 * function codeOf(error: unknown): IdempotencyErrorCode | undefined {
 *   return error instanceof IdempotencyError ? error.code : undefined;
 * }
 * ```
 */
export type IdempotencyErrorCode =
  | "DUPLICATE"
  | "IN_PROGRESS"
  | "UNKEYED_MESSAGE"
  | "INVALID_KEY"
  | "INVALID_CONFIGURATION"
  | "BACKEND_ERROR"
  | "MALFORMED_MESSAGE"
  | "THROWN_VALUE"
  | "payload_mismatch";

/**
 * Base class of every error this package raises; `code` is stable across versions.
 *
 * @example
 * ```ts
 * import { IdempotencyError, InMemoryLock, lock } from "gcp-pubsub-idempotency";
 *
 * try {
 *   await lock("orders:42", { backend: new InMemoryLock() }, async () => {});
 * } catch (error) {
 *   if (error instanceof IdempotencyError) console.warn(error.code, error.message);
 *   throw error;
 * }
 * ```
 */
export class IdempotencyError extends Error {
  /** Which kind of failure this is; stable across versions. */
  readonly code: IdempotencyErrorCode;
  constructor(code: IdempotencyErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/**
 * Rejection of {@link lock}: the key completed within its ttl, so the body was skipped.
 * Ack the message.
 *
 * @example
 * ```ts
 * import { Duplicate, InMemoryLock, lock } from "gcp-pubsub-idempotency";
 *
 * const backend = new InMemoryLock();
 * await lock("orders:42", { backend }, async () => {});
 * await lock("orders:42", { backend }, async () => {}).catch((error) => {
 *   if (!(error instanceof Duplicate)) throw error; // already done: ack
 * });
 * ```
 */
export class Duplicate extends IdempotencyError {
  /** The key that was already completed. */
  readonly key: string;
  /** `detail` follows the message: for once(), why no result can be replayed. */
  constructor(key: string, detail?: string) {
    // An answer, not a fault: no stack trace to capture (most of what a throw would cost).
    const limit = withoutStackTrace();
    super(
      "DUPLICATE",
      `key ${quoteKey(key)} already completed; the body was skipped${detail ?? ""}`,
    );
    restoreStackTrace(limit);
    this.key = key;
  }
}

/**
 * Turn off stack capture for the next Error built, returning the limit to restore. Frozen
 * intrinsics (a hardened realm) make the limit read-only: then the stack is simply captured.
 */
function withoutStackTrace(): number | undefined {
  try {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    return limit;
  } catch {
    return undefined;
  }
}

function restoreStackTrace(limit: number | undefined): void {
  if (limit === undefined) return;
  try {
    Error.stackTraceLimit = limit;
  } catch {
    // Read-only after all: nothing was changed.
  }
}

/** The text of an {@link InProgress}; also the 503 body of a held push, built without one. */
export function inProgressText(key: string, leaseExpiresAt?: number, detail?: string): string {
  const until = leaseExpiresAt === undefined ? "" : ` until ${isoTime(leaseExpiresAt)}`;
  return `key ${quoteKey(key)} is held by another holder${until}${detail ?? ""}`;
}

let lastIsoMs = Number.NaN;
let lastIsoText = "";

/**
 * Epoch ms as ISO 8601, remembering the last one. A held key is redelivered again and again
 * while one holder keeps it, each time with that holder's lease end: formatting the Date was
 * 42 % of a held pull delivery's CPU (`npm run bench -- --only gateway`, 3 December 2026).
 */
export function isoTime(ms: number): string {
  if (ms !== lastIsoMs) {
    lastIsoText = new Date(ms).toISOString();
    lastIsoMs = ms;
  }
  return lastIsoText;
}

/**
 * Rejection of {@link lock} and {@link mutex}: a live holder elsewhere owns the key (or,
 * for a mutex, `lock` completed it). Nack and let Pub/Sub retry later.
 *
 * @example
 * ```ts
 * import { InMemoryLock, InProgress, mutex } from "gcp-pubsub-idempotency";
 *
 * const backend = new InMemoryLock();
 * await mutex("po:4711", { backend }, async () => {
 *   await mutex("po:4711", { backend }, async () => {}).catch((error) => {
 *     if (error instanceof InProgress) console.log("held until", error.leaseExpiresAt);
 *   });
 * });
 * ```
 */
export class InProgress extends IdempotencyError {
  /** The contended key. */
  readonly key: string;
  /** When the holder's lease ends, epoch ms; absent when the key was completed by `lock`. */
  readonly leaseExpiresAt?: number;
  constructor(key: string, leaseExpiresAt?: number, detail?: string) {
    // Contention is routine under redelivery: like Duplicate, no stack trace is captured.
    const limit = withoutStackTrace();
    super("IN_PROGRESS", inProgressText(key, leaseExpiresAt, detail));
    restoreStackTrace(limit);
    this.key = key;
    if (leaseExpiresAt !== undefined) this.leaseExpiresAt = leaseExpiresAt;
  }
}

/**
 * Rejection of every verb given a `fingerprint` (and of a surface with one): the key's record
 * was claimed or completed with another fingerprint, so this call carries another payload
 * under the same key. The body never runs. Usually the key is chosen too coarse, or the
 * publisher reused a business key for a different message; the surfaces never ack it.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, PayloadMismatch } from "gcp-pubsub-idempotency";
 *
 * const backend = new InMemoryLock();
 * await lock("orders:42", { backend, fingerprint: "total=99" }, async () => {});
 * await lock("orders:42", { backend, fingerprint: "total=12" }, async () => {}).catch((error) => {
 *   if (error instanceof PayloadMismatch) console.error("same key, other payload:", error.key);
 * });
 * ```
 */
export class PayloadMismatch extends IdempotencyError {
  /** The key whose record holds another fingerprint. */
  readonly key: string;
  constructor(key: string) {
    super("payload_mismatch", payloadMismatchText(key));
    this.key = key;
  }
}

/** The text of a {@link PayloadMismatch}; also the 409 body of a push, built without one. */
export function payloadMismatchText(key: string): string {
  return `key ${quoteKey(key)} was first used with another payload (its fingerprint differs); the body did not run — choose a key that names the payload, or send the new payload under a new key`;
}

/**
 * No idempotency key could be resolved for a message: the gateway refuses it (fail
 * closed) rather than run the handler unguarded, unless `allowUnguarded` is set.
 *
 * @example
 * ```ts
 * import { idempotent, InMemoryLock, UnkeyedMessage } from "gcp-pubsub-idempotency";
 *
 * const handler = idempotent({ backend: new InMemoryLock() }, async () => {});
 * await handler({ type: "google.cloud.pubsub.topic.v1.messagePublished", data: {} })
 *   .catch((error) => console.log(error instanceof UnkeyedMessage)); // true
 * ```
 */
export class UnkeyedMessage extends IdempotencyError {
  constructor(message = "no idempotency key could be resolved for the message") {
    super("UNKEYED_MESSAGE", message);
  }
}

/**
 * The key is empty, not a string, or longer than {@link MAX_KEY_BYTES} UTF-8 bytes.
 * Thrown before any I/O by the verbs, the backends and {@link assertValidKey}.
 *
 * @example
 * ```ts
 * import { InMemoryLock, InvalidKey, lock } from "gcp-pubsub-idempotency";
 *
 * await lock("", { backend: new InMemoryLock() }, async () => {})
 *   .catch((error) => console.log(error instanceof InvalidKey)); // true
 * ```
 */
export class InvalidKey extends IdempotencyError {
  constructor(message: string) {
    super("INVALID_KEY", message);
  }
}

/**
 * An option is missing or out of range; thrown before any I/O (by constructors, by the
 * surfaces when they are built, by the verbs when they start).
 *
 * @example
 * ```ts
 * import { InMemoryLock, InvalidConfiguration } from "gcp-pubsub-idempotency";
 *
 * try {
 *   new InMemoryLock({ ttlMs: -1 });
 * } catch (error) {
 *   console.log(error instanceof InvalidConfiguration); // true
 * }
 * ```
 */
export class InvalidConfiguration extends IdempotencyError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("INVALID_CONFIGURATION", message, options);
  }
}

/**
 * A store call failed; the message names the backend, the verb and the key, and `cause`
 * holds the driver's error. Before the work it propagates (nack); see the README for the
 * failures after the work that the verbs log instead.
 *
 * @example
 * ```ts
 * import { BackendError, type LockBackend, lock } from "gcp-pubsub-idempotency";
 *
 * declare const backend: LockBackend;
 * await lock("orders:42", { backend }, async () => {}).catch((error) => {
 *   if (error instanceof BackendError) console.error(error.backend, error.verb, error.cause);
 *   throw error;
 * });
 * ```
 */
export class BackendError extends IdempotencyError {
  /** Which store failed, e.g. `redis`, `postgres`, `datastore`. */
  readonly backend: string;
  /** The backend method that failed, e.g. `claim` or `purgeExpired`. */
  readonly verb: string;
  /** The key of the call; undefined for calls without one (`purgeExpired`, `ensureSchema`). */
  readonly key: string | undefined;
  constructor(backend: string, verb: string, key: string | undefined, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    const on = key === undefined ? "" : ` for key ${quoteKey(key)}`;
    super("BACKEND_ERROR", `${backend} ${verb} failed${on}: ${reason}`, { cause });
    this.backend = backend;
    this.verb = verb;
    this.key = key;
  }
}

/**
 * A push body or CloudEvent that is not a Pub/Sub message, or a payload that is not JSON
 * for {@link ParsedMessage.json}; the message is one line. `idempotentHttp` answers it with 400.
 *
 * @example
 * ```ts
 * import { MalformedMessage, parsePushBody } from "gcp-pubsub-idempotency";
 *
 * try {
 *   parsePushBody({ subscription: "projects/p/subscriptions/s" });
 * } catch (error) {
 *   if (error instanceof MalformedMessage) console.log(error.message); // has no "message" field
 * }
 * ```
 */
export class MalformedMessage extends IdempotencyError {
  constructor(message: string) {
    super("MALFORMED_MESSAGE", message);
  }
}

/**
 * Stands for a value a handler, a `key` function or a hook threw that is not a usable
 * `Error` (`undefined`, `null`, `0`, `""`, a Symbol, `Object.create(null)`, an Error whose
 * getters throw, …). The surfaces wrap such a value before it reaches a framework, so the
 * message is nacked, never acked: functions-framework treats a falsy throw as success. The
 * original value is kept as `cause`.
 *
 * @example
 * ```ts
 * import { idempotentMessage, InMemoryLock, ThrownValue } from "gcp-pubsub-idempotency";
 *
 * const logger = {
 *   info() {},
 *   warn() {},
 *   error(_message: string, fields?: Record<string, unknown>) {
 *     console.log(fields?.error); // "ThrownValue: the handler threw a non-Error value: undefined"
 *   },
 * };
 * const handler = idempotentMessage({ backend: new InMemoryLock(), logger }, async () => {
 *   throw undefined; // nacked, never acked
 * });
 * console.log(new ThrownValue("the handler", undefined).cause); // undefined
 * ```
 */
export class ThrownValue extends IdempotencyError {
  constructor(where: string, value: unknown) {
    super("THROWN_VALUE", `${where} threw a non-Error value: ${render(value)}`, { cause: value });
  }
}

/**
 * `value` when it is an Error whose name, message and stack can be read; otherwise a
 * {@link ThrownValue} wrapping it. Total: never throws.
 */
export function asError(where: string, value: unknown): Error {
  try {
    if (value instanceof Error) {
      // Reading them is what a framework or a logger will do; a getter that throws here
      // would throw there, outside any catch.
      const { name, message, stack } = value;
      if (typeof name === "string" && typeof message === "string") {
        void stack;
        return value;
      }
    }
  } catch {
    // fall through: wrap it
  }
  return new ThrownValue(where, value);
}

/** A rendering of a thrown value that runs none of its code. */
function render(value: unknown): string {
  if (value === undefined || typeof value !== "object" || value === null) return describe(value);
  try {
    if (value instanceof Error) return "an Error whose properties cannot be read";
  } catch {
    // a Proxy whose getPrototypeOf trap throws
  }
  return describe(value);
}

/** Quote a key for a message, shortened so a 1 KiB key does not flood a log line. */
export function quoteKey(key: string): string {
  const shown = key.length > 120 ? `${key.slice(0, 117)}...` : key;
  return JSON.stringify(shown);
}
