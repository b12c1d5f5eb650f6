// The claims of a Google ID token, read twice: before the signature is checked (to refuse
// early) and on the payload google-auth-library verified (to decide). The library checks iss,
// aud, iat and exp against the system clock with a 5 min skew; these checks use the
// verifier's clock with a 1 min skew, and add nbf, email and email_verified.
import type { PushAuthAccepted, Refusal } from "./verdict.js";

/** The issuers of Google ID tokens (Google's documentation accepts both spellings). */
export const GOOGLE_ID_TOKEN_ISSUERS: readonly string[] = [
  "https://accounts.google.com",
  "accounts.google.com",
];

/** Tolerance of the exp/iat/nbf checks added here, ms. */
const PUSH_AUTH_CLOCK_SKEW_MS = 60_000;

/** iss, aud and the times of a payload; the reason for a 401, or undefined. */
export function claimFlaw(
  payload: Record<string, unknown>,
  audience: string,
  now: number,
): string | undefined {
  if (!GOOGLE_ID_TOKEN_ISSUERS.includes(payload.iss as string)) {
    return "token issuer is not Google";
  }
  if (payload.aud !== audience) return "token audience does not match";
  const { exp, iat, nbf } = payload;
  if (!isSeconds(exp) || !isSeconds(iat)) return "token has no valid exp or iat";
  if (now >= exp * 1000 + PUSH_AUTH_CLOCK_SKEW_MS) return "token expired";
  if (now < iat * 1000 - PUSH_AUTH_CLOCK_SKEW_MS) return "token issued in the future";
  if (nbf !== undefined) {
    if (!isSeconds(nbf)) return "token has an invalid nbf";
    if (now < nbf * 1000 - PUSH_AUTH_CLOCK_SKEW_MS) return "token not yet valid";
  }
  return undefined;
}

/** The identity of a verified payload: 403 unless it is a verified, allowed email. */
export function identity(
  payload: Record<string, unknown>,
  allowed: ReadonlySet<string> | undefined,
): PushAuthAccepted | Refusal {
  const { email, sub, exp } = payload;
  if (typeof email !== "string" || email === "") {
    return { status: 403, reason: "token carries no email" };
  }
  const shown = email.length > 254 ? `${email.slice(0, 251)}...` : email;
  if (payload.email_verified !== true) {
    return { status: 403, reason: `token email ${shown} is not verified` };
  }
  if (allowed !== undefined && !allowed.has(email.toLowerCase())) {
    return { status: 403, reason: `token of ${shown} is not an allowed push service account` };
  }
  return {
    ok: true,
    email,
    subject: typeof sub === "string" ? sub : "",
    expiresAt: (exp as number) * 1000,
  };
}

function isSeconds(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

/** A JSON object: what a token's header and payload, and a certificate source, must be. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
