/** Stable machine-readable codes, one per error class. */
export type IdempotencyErrorCode =
  | "DUPLICATE"
  | "IN_PROGRESS"
  | "UNKEYED_MESSAGE"
  | "INVALID_KEY"
  | "INVALID_CONFIGURATION"
  | "BACKEND_ERROR"
  | "MALFORMED_MESSAGE";

/** Base class of every error this package raises; `code` is stable across versions. */
export class IdempotencyError extends Error {
  readonly code: IdempotencyErrorCode;
  constructor(code: IdempotencyErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The key completed within its ttl: the body was skipped. Ack the message. */
export class Duplicate extends IdempotencyError {
  readonly key: string;
  constructor(key: string) {
    super("DUPLICATE", `key ${quoteKey(key)} already completed; the body was skipped`);
    this.key = key;
  }
}

/** A live holder elsewhere owns the key. Nack and let Pub/Sub retry later. */
export class InProgress extends IdempotencyError {
  readonly key: string;
  readonly leaseExpiresAt?: number;
  constructor(key: string, leaseExpiresAt?: number, detail?: string) {
    const until =
      leaseExpiresAt === undefined ? "" : ` until ${new Date(leaseExpiresAt).toISOString()}`;
    super("IN_PROGRESS", `key ${quoteKey(key)} is held by another holder${until}${detail ?? ""}`);
    this.key = key;
    if (leaseExpiresAt !== undefined) this.leaseExpiresAt = leaseExpiresAt;
  }
}

/** No idempotency key could be resolved for a message: refused rather than run unguarded. */
export class UnkeyedMessage extends IdempotencyError {
  constructor(message = "no idempotency key could be resolved for the message") {
    super("UNKEYED_MESSAGE", message);
  }
}

/** The key is empty, not a string, or longer than MAX_KEY_BYTES. */
export class InvalidKey extends IdempotencyError {
  constructor(message: string) {
    super("INVALID_KEY", message);
  }
}

/** An option is missing or out of range; raised before any I/O. */
export class InvalidConfiguration extends IdempotencyError {
  constructor(message: string) {
    super("INVALID_CONFIGURATION", message);
  }
}

/** A store call failed; the message names the backend, the verb and the key. */
export class BackendError extends IdempotencyError {
  readonly backend: string;
  readonly verb: string;
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

/** A push body or CloudEvent that is not a Pub/Sub message; the message is one line. */
export class MalformedMessage extends IdempotencyError {
  constructor(message: string) {
    super("MALFORMED_MESSAGE", message);
  }
}

/** Quote a key for a message, shortened so a 1 KiB key does not flood a log line. */
export function quoteKey(key: string): string {
  const shown = key.length > 120 ? `${key.slice(0, 117)}...` : key;
  return JSON.stringify(shown);
}
