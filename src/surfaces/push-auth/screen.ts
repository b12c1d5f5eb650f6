// The pre-screen: everything about a push's Authorization header that can be refused without
// certificates, so a junk request costs no certificate fetch and no RSA work.
import { Buffer } from "node:buffer";
import { claimFlaw, isPlainObject } from "./claims.js";
import type { Refusal } from "./verdict.js";

/** Longer than any JWT Google issues; bounds the work an oversized header can cause. */
const MAX_TOKEN_CHARS = 8_192;

const BEARER = /^bearer +([^ ]+) *$/i;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** What the cheap checks learnt of a token that passed them. */
export interface ScreenedToken {
  readonly token: string;
  readonly kid: string;
}

/**
 * Everything that can be refused without certificates: the header's form, the token's form
 * (three canonical base64url segments, JSON objects), `alg`, `kid`, and the claims as they
 * read before their signature is checked. Only refusals are decided here, never acceptance.
 */
export function screen(
  authorization: unknown,
  audience: string,
  now: number,
): ScreenedToken | Refusal {
  if (authorization === undefined || authorization === "") {
    return { status: 401, reason: "no Authorization header" };
  }
  if (typeof authorization !== "string") {
    return { status: 401, reason: "malformed Authorization header" };
  }
  if (authorization.length > MAX_TOKEN_CHARS) return { status: 401, reason: "token too long" };
  const token = bearerToken(authorization);
  if (token === undefined) {
    return { status: 401, reason: "Authorization header is not a Bearer token" };
  }
  const segments = token.split(".");
  if (segments.length !== 3) return { status: 401, reason: "malformed token" };
  const [headerSegment, payloadSegment, signatureSegment] = segments as [string, string, string];
  const header = decodeJsonSegment(headerSegment);
  if (header === undefined) return { status: 401, reason: "malformed token" };
  // google-auth-library verifies every token as RSA-SHA256 whatever `alg` says, which already
  // defeats `none` and HS256-with-the-public-key; refused here, such a token's reason says so.
  if (header.alg !== "RS256") return { status: 401, reason: "token algorithm is not RS256" };
  if (typeof header.kid !== "string" || header.kid === "") {
    return { status: 401, reason: "token has no key id" };
  }
  const payload = decodeJsonSegment(payloadSegment);
  if (payload === undefined || !isCanonicalBase64Url(signatureSegment)) {
    return { status: 401, reason: "malformed token" };
  }
  const flaw = claimFlaw(payload, audience, now);
  if (flaw !== undefined) return { status: 401, reason: flaw };
  return { token, kid: header.kid };
}

/** The token of a `Bearer` header value of a sane length, or undefined. */
export function bearerToken(authorization: unknown): string | undefined {
  if (typeof authorization !== "string" || authorization.length > MAX_TOKEN_CHARS) return undefined;
  return BEARER.exec(authorization.trim())?.[1];
}

/**
 * Strict base64url without padding that re-encodes to itself. Node's decoder skips invalid
 * characters and ignores a last character's unused bits, so without this several strings
 * would decode to one valid signature: a mutated token must never pass.
 */
function isCanonicalBase64Url(segment: string): boolean {
  return (
    BASE64URL.test(segment) && Buffer.from(segment, "base64url").toString("base64url") === segment
  );
}

function decodeJsonSegment(segment: string): Record<string, unknown> | undefined {
  if (!isCanonicalBase64Url(segment)) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));
    return isPlainObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
