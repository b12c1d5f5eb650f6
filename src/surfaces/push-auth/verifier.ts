// Push authentication: Pub/Sub signs each authenticated push with a Google-issued OIDC token
// (`Authorization: Bearer <JWT>`). Each step refuses a part of what the one before let
// through: the pre-screen (screen.ts) what needs no certificates, google-auth-library
// (google-auth.ts) a bad signature, the claims (claims.ts) a wrong time or identity. This
// file runs them in that order and logs each refusal once.
import { errorText } from "../../core/logger.js";
import { AcceptedTokens } from "./accepted-tokens.js";
import { GoogleCertificates, pemsByKid } from "./certificates.js";
import { claimFlaw, GOOGLE_ID_TOKEN_ISSUERS, identity, isPlainObject } from "./claims.js";
import {
  GoogleAuthLoader,
  libraryRefusal,
  loadFailure,
  type OAuth2ClientLike,
} from "./google-auth.js";
import {
  type PushAuthOptions,
  type PushVerifierContext,
  type ResolvedPushAuthOptions,
  readVerifierContext,
  resolvePushAuthOptions,
  resolveVerifierContext,
} from "./options.js";
import { bearerToken, screen } from "./screen.js";
import {
  type PushAuthAccepted,
  type PushAuthResult,
  type Refusal,
  refused,
  scrub,
} from "./verdict.js";

/**
 * Checks the `Authorization` header value of one push. Total: it never rejects; whatever goes
 * wrong is a refusal. It writes one WARNING line per 401/403 and one ERROR line per 503, so
 * the caller need not log the refusal again.
 *
 * @example
 * ```ts
 * import { createPushVerifier, type PushVerifier } from "gcp-pubsub-idempotency";
 *
 * const verify: PushVerifier = createPushVerifier({ audience: "https://example.com/push" });
 * const result = await verify(undefined);
 * console.log(result.ok); // false: 401, no Authorization header
 * ```
 */
export type PushVerifier = (authorization: string | undefined) => Promise<PushAuthResult>;

/**
 * Build the verifier of the `auth` option: validates `options` now (throws
 * {@link InvalidConfiguration}), starts loading google-auth-library, and returns a function
 * of the `Authorization` header value alone, to call before the body is parsed.
 *
 * @example
 * ```ts
 * import { createPushVerifier } from "gcp-pubsub-idempotency";
 *
 * const verify = createPushVerifier({
 *   audience: "https://orders-abc123-ew.a.run.app/push",
 *   serviceAccountEmail: "pusher@my-project.iam.gserviceaccount.com",
 * });
 * const result = await verify("Bearer eyJ...");
 * if (!result.ok) console.log(result.status, result.reason); // 401 malformed token
 * ```
 */
export function createPushVerifier(
  options: PushAuthOptions,
  context: PushVerifierContext = {},
): PushVerifier {
  const resolved = resolvePushAuthOptions(options);
  return verifierFor(resolved, readVerifierContext(context));
}

/** {@link createPushVerifier} for options already checked (by a surface, under its own name). */
export function verifierFor(
  resolved: ResolvedPushAuthOptions,
  context: PushVerifierContext = {},
): PushVerifier {
  const { logger, now, certificatesUrl } = resolveVerifierContext(context);
  if (resolved.serviceAccountEmails === undefined) {
    logger.warn(
      "push authentication without serviceAccountEmail accepts a Google-signed token of any account for this audience; name the push service account",
      { audience: resolved.audience },
    );
  }
  const library = new GoogleAuthLoader(certificatesUrl);
  // Loaded now, so the first push does not wait for it, and a missing library is logged as the
  // verifier is built, before any push arrives; each push until it loads is still a 503.
  library.load().catch((error: unknown) => {
    const reason = loadFailure(error);
    logger.error(`${reason}; until then every push is answered 503 and redelivered`, { reason });
  });
  const googleCertificates = new GoogleCertificates();
  const acceptedTokens = new AcceptedTokens();

  const check = async (authorization: unknown): Promise<PushAuthAccepted | Refusal> => {
    // A token accepted before: only its times are checked again.
    const known = acceptedTokens.get(bearerToken(authorization));
    if (known !== undefined) {
      const flaw = claimFlaw(known.payload, resolved.audience, now());
      return flaw === undefined ? known.verdict : { status: 401, reason: flaw };
    }
    const screened = screen(authorization, resolved.audience, now());
    if ("status" in screened) return screened;

    let oauth: OAuth2ClientLike;
    try {
      oauth = await library.load();
    } catch (error) {
      return { status: 503, reason: loadFailure(error) };
    }
    let certs: Record<string, string>;
    try {
      const source =
        resolved.certificates === undefined
          ? await googleCertificates.fetch(oauth)
          : await resolved.certificates();
      certs = pemsByKid(source);
    } catch (error) {
      return {
        status: 503,
        reason: `signing certificates unavailable: ${scrub(errorText(error), screened.token)}`,
      };
    }
    if (!Object.hasOwn(certs, screened.kid)) {
      return { status: 401, reason: "token key id is not among the signing certificates" };
    }

    let payload: Record<string, unknown>;
    try {
      const ticket = await oauth.verifySignedJwtWithCertsAsync(
        screened.token,
        certs,
        resolved.audience,
        [...GOOGLE_ID_TOKEN_ISSUERS],
      );
      const verified = ticket.getPayload();
      if (!isPlainObject(verified)) return { status: 401, reason: "token has no payload" };
      payload = verified;
    } catch (error) {
      return libraryRefusal(error, screened.token);
    }
    // The same checks again, now on the payload the library verified.
    const flaw = claimFlaw(payload, resolved.audience, now());
    if (flaw !== undefined) return { status: 401, reason: flaw };
    const verdict = identity(payload, resolved.serviceAccountEmails);
    if ("ok" in verdict) acceptedTokens.keep(screened.token, { verdict, payload });
    return verdict;
  };

  return async (authorization) => {
    let verdict: PushAuthAccepted | Refusal;
    try {
      verdict = await check(authorization);
    } catch (error) {
      // Not reachable by design; the verifier stays total even so.
      verdict = { status: 503, reason: `push authentication failed: ${errorText(error)}` };
    }
    if ("ok" in verdict) return verdict;
    const fields = { status: verdict.status, reason: verdict.reason };
    if (verdict.status === 503)
      logger.error(`push not verified (${verdict.status}): ${verdict.reason}`, fields);
    else logger.warn(`push refused (${verdict.status}): ${verdict.reason}`, fields);
    return refused(verdict);
  };
}
