// What a verifier answers: an accepted push and its identity, or a refusal whose status tells
// Pub/Sub whether to retry (401/403 never succeed on a retry; 503 may) and whose reason is
// fit for a log line.

/**
 * A push whose token verified: the identity that sent it.
 *
 * @example
 * ```ts
 * import type { PushAuthAccepted } from "gcp-pubsub-idempotency";
 *
 * const seen = (accepted: PushAuthAccepted) => console.log(accepted.email, accepted.subject);
 * ```
 */
export interface PushAuthAccepted {
  /** Always true: the push may be delivered. */
  readonly ok: true;
  /** The verified `email` claim: the push service account. */
  readonly email: string;
  /** The `sub` claim: the account's unique numeric id. */
  readonly subject: string;
  /** The token's `exp`, epoch ms. */
  readonly expiresAt: number;
}

/**
 * A push to answer without reading its body: `status` and `headers` are the response.
 * 401 (with `WWW-Authenticate: Bearer`): no token, or one that is malformed, not RS256,
 * badly signed, expired, not yet valid, or for another audience or issuer. 403: a genuine
 * Google token whose identity is not allowed (another account, no email, or
 * `email_verified` not true). 503: the token could not be checked at all (certificates
 * unavailable, google-auth-library missing); a 5xx, so Pub/Sub and Eventarc retry.
 *
 * @example
 * ```ts
 * import type { PushAuthRefused } from "gcp-pubsub-idempotency";
 *
 * function answer(refused: PushAuthRefused, res: { statusCode: number; setHeader(n: string, v: string): void; end(): void }) {
 *   res.statusCode = refused.status;
 *   for (const [name, value] of Object.entries(refused.headers)) res.setHeader(name, value);
 *   res.end();
 * }
 * ```
 */
export interface PushAuthRefused {
  /** Always false: answer `status` and deliver nothing. */
  readonly ok: false;
  /** The HTTP status to answer. */
  readonly status: 401 | 403 | 503;
  /** A short phrase for a log line; never contains the token. */
  readonly reason: string;
  /** Response headers: `www-authenticate` on a 401, none otherwise. */
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The verdict of a {@link PushVerifier}.
 *
 * @example
 * ```ts
 * import type { PushAuthResult } from "gcp-pubsub-idempotency";
 *
 * const statusOf = (result: PushAuthResult) => (result.ok ? 204 : result.status);
 * ```
 */
export type PushAuthResult = PushAuthAccepted | PushAuthRefused;

/** A refusal before it is logged and answered. */
export interface Refusal {
  readonly status: 401 | 403 | 503;
  readonly reason: string;
}

const UNAUTHENTICATED = Object.freeze({ "www-authenticate": "Bearer" });
const NO_HEADERS = Object.freeze({});

/** A refusal as the caller answers it: a 401 asks for a Bearer token (RFC 6750). */
export function refused(refusal: Refusal): PushAuthRefused {
  return {
    ok: false,
    status: refusal.status,
    reason: refusal.reason,
    headers: refusal.status === 401 ? UNAUTHENTICATED : NO_HEADERS,
  };
}

/** A library or user message made fit for a log line: no token, no run-on text. */
export function scrub(text: string, token: string): string {
  let clean = text;
  for (const part of [token, ...token.split(".")]) {
    if (part.length >= 8) clean = clean.split(part).join("[token]");
  }
  return clean.length > 300 ? `${clean.slice(0, 297)}...` : clean;
}
