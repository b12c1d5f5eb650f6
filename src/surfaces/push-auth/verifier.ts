import { Buffer } from "node:buffer";
import { isArraySafe } from "../../core/describe.js";
import { InvalidConfiguration } from "../../core/errors.js";
import { errorText, guardLogger, jsonLogger } from "../../core/logger.js";
import { importPeer } from "../../core/peer.js";
import type { Logger } from "../../core/types.js";
import {
  describe,
  functionOption,
  knownOptions,
  readOptions,
  stringOption,
} from "../../core/validate.js";

// Push authentication: Pub/Sub signs each authenticated push with a Google-issued OIDC token
// (`Authorization: Bearer <JWT>`). google-auth-library (an optional peer, imported when a
// verifier is built) checks the RS256 signature by `kid`, iss, aud, iat and exp. It does not
// look at the header's `alg`, at `nbf`, at `email`/`email_verified`, and its clock (the
// system's, 5 min skew) cannot be injected: those checks are added here, the clock ones with
// a 1 min skew. Everything that can be refused without certificates is refused first, so a
// junk request costs no certificate fetch and no RSA work. One file over 350 lines because it
// is one path: the option check, the cheap screen, the library call and the identity check
// each refuse a part of what the one before let through.

/**
 * The `auth` option of `idempotentHttp`: who may push to the endpoint.
 *
 * @example
 * ```ts
 * import type { PushAuthOptions } from "gcp-pubsub-idempotency";
 *
 * const auth: PushAuthOptions = {
 *   audience: "https://orders-abc123-ew.a.run.app/push", // --push-auth-token-audience
 *   serviceAccountEmail: "pusher@my-project.iam.gserviceaccount.com", // --push-auth-service-account
 * };
 * ```
 */
export interface PushAuthOptions {
  /**
   * The token audience the push subscription sets (`--push-auth-token-audience`; by default
   * Pub/Sub uses the push endpoint URL). The token's `aud` must equal it.
   */
  audience: string;
  /**
   * The push service account(s) (`--push-auth-service-account`). Without it any Google-signed
   * token for `audience` passes, and anyone can mint one with a service account of their own:
   * leave it out only behind another check.
   */
  serviceAccountEmail?: string | readonly string[] | undefined;
  /**
   * The signing keys, PEM (public key or X.509 certificate) by `kid`, for tests and air-gapped
   * setups. Default: Google's OAuth2 certificates, cached as long as their Cache-Control allows.
   */
  certificates?: (() => Promise<Record<string, string>>) | undefined;
}

/** {@link PushAuthOptions} after one validation pass. */
export interface ResolvedPushAuthOptions {
  readonly audience: string;
  /** Lower-cased; undefined when any verified email is allowed. */
  readonly serviceAccountEmails: ReadonlySet<string> | undefined;
  readonly certificates: (() => Promise<Record<string, string>>) | undefined;
}

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
 * Where a {@link PushVerifier} logs, and the seams tests use.
 *
 * @example
 * ```ts
 * import { createPushVerifier, type PushVerifierContext } from "gcp-pubsub-idempotency";
 *
 * const context: PushVerifierContext = { now: () => Date.UTC(2026, 0, 1) };
 * const verify = createPushVerifier({ audience: "https://example.com/push" }, context);
 * ```
 */
export interface PushVerifierContext {
  /** Default {@link jsonLogger}. */
  logger?: Logger | undefined;
  /**
   * The clock of the exp/iat/nbf checks added here, epoch ms; default `Date.now`.
   * google-auth-library also checks iat/exp against the system clock (5 min skew).
   */
  now?: (() => number) | undefined;
  /**
   * Where the default certificate source fetches the PEM certificates (a mirror, or a
   * loopback server in tests); default Google's. Needs google-auth-library 9.6 or later.
   */
  certificatesUrl?: string | undefined;
}

/** The issuers of Google ID tokens (Google's documentation accepts both spellings). */
const GOOGLE_ID_TOKEN_ISSUERS: readonly string[] = [
  "https://accounts.google.com",
  "accounts.google.com",
];

/** Tolerance of the exp/iat/nbf checks added here, ms. */
const PUSH_AUTH_CLOCK_SKEW_MS = 60_000;

/** How many verified tokens a verifier keeps (one per push identity and hour in practice). */
const ACCEPTED_TOKENS_KEPT = 256;

/** Longer than any JWT Google issues; bounds the work an oversized header can cause. */
const MAX_TOKEN_CHARS = 8_192;

const AUTH_OPTION_NAMES = ["audience", "serviceAccountEmail", "certificates"] as const;
const AUTH_OPTIONS = knownOptions(AUTH_OPTION_NAMES);
const AUDIENCE = /^[^\s\p{Cc}]{1,2048}$/u;
const EMAIL = /^[^\s@]{1,200}@[^\s@]{1,200}$/u;
const BEARER = /^bearer +([^ ]+) *$/i;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const UNAUTHENTICATED = Object.freeze({ "www-authenticate": "Bearer" });
const NO_HEADERS = Object.freeze({});

/**
 * Check a {@link PushAuthOptions} value once, where it enters; each refusal (an
 * {@link InvalidConfiguration}) names the field, prefixed by `name`.
 */
export function resolvePushAuthOptions(value: unknown, name = "auth"): ResolvedPushAuthOptions {
  // A misspelt key of a security option must not silently widen who may push.
  const o = readOptions(name, value, false, AUTH_OPTION_NAMES, AUTH_OPTIONS);
  if (o.audience === undefined) {
    throw new InvalidConfiguration(
      `${name}.audience is required: the token audience of the push subscription (--push-auth-token-audience, by default the push endpoint URL)`,
    );
  }
  const audience = stringOption(
    `${name}.audience`,
    o.audience,
    AUDIENCE,
    "a non-empty string without whitespace or control characters, at most 2048 long",
  ) as string;
  return {
    audience,
    serviceAccountEmails: emailsOption(`${name}.serviceAccountEmail`, o.serviceAccountEmail),
    certificates: functionOption<() => Promise<Record<string, string>>>(
      `${name}.certificates`,
      o.certificates,
    ),
  };
}

function emailsOption(name: string, value: unknown): ReadonlySet<string> | undefined {
  if (value === undefined) return undefined;
  const list: unknown[] = isArraySafe(value) ? [...(value as unknown[])] : [value];
  if (list.length === 0) {
    throw new InvalidConfiguration(`${name} must name at least one service account, got []`);
  }
  const allowed = "an email address or a non-empty array of them";
  for (const email of list) stringOption(name, email, EMAIL, allowed);
  // Google writes service account emails in lower case; a configured capital must not lock out.
  return new Set((list as string[]).map((email) => email.toLowerCase()));
}

/** The parts of google-auth-library this module calls (the same in 9.x and 10.x). */
interface OAuth2ClientLike {
  verifySignedJwtWithCertsAsync(
    jwt: string,
    certs: Record<string, string>,
    requiredAudience: string,
    issuers: string[],
  ): Promise<{ getPayload(): unknown }>;
  getFederatedSignonCertsAsync(): Promise<{ certs: unknown }>;
  readonly endpoints?: { readonly oauth2FederatedSignonPemCertsUrl?: unknown };
}

type OAuth2ClientConstructor = new (options?: {
  endpoints?: { oauth2FederatedSignonPemCertsUrl: string };
}) => OAuth2ClientLike;

/** What the cheap checks learnt of a token that passed them. */
interface ScreenedToken {
  readonly token: string;
  readonly kid: string;
}

/** A refusal before it is logged and answered. */
interface Refusal {
  readonly status: 401 | 403 | 503;
  readonly reason: string;
}

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
  const read = readOptions("createPushVerifier() context", context, true, CONTEXT_OPTION_NAMES);
  return verifierFor(resolved, read as PushVerifierContext);
}

const CONTEXT_OPTION_NAMES = ["logger", "now", "certificatesUrl"] as const;

/** {@link createPushVerifier} for options already checked (by a surface, under its own name). */
export function verifierFor(
  resolved: ResolvedPushAuthOptions,
  context: PushVerifierContext = {},
): PushVerifier {
  const logger = guardLogger(context.logger ?? jsonLogger);
  const now = functionOption<() => number>("now", context.now) ?? Date.now;
  const certificatesUrl = stringOption(
    "certificatesUrl",
    context.certificatesUrl,
    /^https?:\/\/\S+$/u,
    "an http(s) URL",
  );
  if (resolved.serviceAccountEmails === undefined) {
    logger.warn(
      "push authentication without serviceAccountEmail accepts a Google-signed token of any account for this audience; name the push service account",
      { audience: resolved.audience },
    );
  }

  let client: Promise<OAuth2ClientLike> | undefined;
  const loadClient = (): Promise<OAuth2ClientLike> => {
    if (client === undefined) {
      const loading = importPeer(
        "push authentication",
        "google-auth-library",
        () => import("google-auth-library"),
      ).then((module) => createClient(module as unknown as GoogleAuthModule, certificatesUrl));
      // A failed import is not cached: the next push tries again (the package may be deployed).
      loading.catch(() => {
        if (client === loading) client = undefined;
      });
      client = loading;
    }
    return client;
  };
  // Loaded now, so the first push does not wait for it, and a missing library is logged as the
  // verifier is built, before any push arrives; each push until it loads is still a 503.
  loadClient().catch((error: unknown) => {
    const reason = loadFailure(error);
    logger.error(`${reason}; until then every push is answered 503 and redelivered`, { reason });
  });

  // Pub/Sub sends one token with many pushes until it nears expiry: a token that verified is
  // kept (only accepted ones, which only Google can mint, so the set cannot be flooded), and
  // its next pushes cost the cheap screen alone. Oldest out first, at most a few hundred.
  const acceptedTokens = new Map<
    string,
    { verdict: PushAuthAccepted; payload: Record<string, unknown> }
  >();

  // Concurrent pushes at a cold start share one certificate fetch; after it the library's
  // own cache (Cache-Control max-age) answers until it lapses.
  let fetching: Promise<unknown> | undefined;
  const googleCertificates = (oauth: OAuth2ClientLike): Promise<unknown> => {
    fetching ??= oauth
      .getFederatedSignonCertsAsync()
      .then((response) => response.certs)
      .finally(() => {
        fetching = undefined;
      });
    return fetching;
  };

  const check = async (authorization: unknown): Promise<PushAuthAccepted | Refusal> => {
    // A token seen before: its signature and identity were checked then, and the same bytes
    // cannot verify differently; only its times are checked again.
    const seen = acceptedTokens.size === 0 ? undefined : bearerToken(authorization);
    const known = seen === undefined ? undefined : acceptedTokens.get(seen);
    if (known !== undefined) {
      const flaw = claimFlaw(known.payload, resolved.audience, now());
      return flaw === undefined ? known.verdict : { status: 401, reason: flaw };
    }
    const screened = screen(authorization, resolved.audience, now());
    if ("status" in screened) return screened;

    let oauth: OAuth2ClientLike;
    try {
      oauth = await loadClient();
    } catch (error) {
      return { status: 503, reason: loadFailure(error) };
    }
    let certs: Record<string, string>;
    try {
      const source =
        resolved.certificates === undefined
          ? await googleCertificates(oauth)
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
    if ("ok" in verdict) {
      if (acceptedTokens.size >= ACCEPTED_TOKENS_KEPT) {
        acceptedTokens.delete(acceptedTokens.keys().next().value as string);
      }
      acceptedTokens.set(screened.token, { verdict, payload });
    }
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
    return {
      ok: false,
      status: verdict.status,
      reason: verdict.reason,
      headers: verdict.status === 401 ? UNAUTHENTICATED : NO_HEADERS,
    };
  };
}

/** Why the library could not be had: importPeer's and createClient's texts name the fix. */
function loadFailure(error: unknown): string {
  return error instanceof InvalidConfiguration
    ? error.message
    : `push authentication could not load google-auth-library: ${errorText(error)}`;
}

interface GoogleAuthModule {
  OAuth2Client?: OAuth2ClientConstructor;
  default?: { OAuth2Client?: OAuth2ClientConstructor };
}

function createClient(module: GoogleAuthModule, certificatesUrl: string | undefined) {
  const OAuth2Client = module.OAuth2Client ?? module.default?.OAuth2Client;
  if (typeof OAuth2Client !== "function") {
    throw new InvalidConfiguration("google-auth-library has no OAuth2Client export");
  }
  if (certificatesUrl === undefined) return new OAuth2Client();
  const oauth = new OAuth2Client({
    endpoints: { oauth2FederatedSignonPemCertsUrl: certificatesUrl },
  });
  // Before 9.6 the option is ignored and Google's URL would be fetched instead.
  if (String(oauth.endpoints?.oauth2FederatedSignonPemCertsUrl) !== certificatesUrl) {
    throw new InvalidConfiguration(
      "certificatesUrl needs google-auth-library 9.6 or later (npm install google-auth-library@latest)",
    );
  }
  return oauth;
}

/**
 * Everything that can be refused without certificates: the header's form, the token's form
 * (three canonical base64url segments, JSON objects), `alg`, `kid`, and the claims as they
 * read before their signature is checked. Only refusals are decided here, never acceptance.
 */
function screen(authorization: unknown, audience: string, now: number): ScreenedToken | Refusal {
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
  // defeats `none` and HS256-with-the-public-key; refusing them here is explicit and cheaper.
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
function bearerToken(authorization: unknown): string | undefined {
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

/** iss, aud and the times of a payload; the reason for a 401, or undefined. */
function claimFlaw(
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
function identity(
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

/** A certificate source's answer as PEM strings by kid, or a throw naming what is wrong. */
function pemsByKid(source: unknown): Record<string, string> {
  if (!isPlainObject(source)) {
    throw new TypeError(
      `certificates must be an object of PEM strings by kid, got ${describe(source)}`,
    );
  }
  const certs: Record<string, string> = Object.create(null);
  for (const [kid, pem] of Object.entries(source)) {
    if (typeof pem !== "string") {
      throw new TypeError(
        `certificate ${JSON.stringify(kid)} is not a PEM string, got ${describe(pem)}`,
      );
    }
    certs[kid] = pem;
  }
  return certs;
}

// The library's messages for a token it refuses. They quote the token or its payload, so
// only the matched phrase of ours reaches a log, never the library's text.
const LIBRARY_REFUSALS: readonly (readonly [RegExp, string])[] = [
  [/^Invalid token signature/, "bad token signature"],
  [/^Token used too early/, "token issued in the future (system clock)"],
  [/^Token used too late/, "token expired (system clock)"],
  [/^Expiration time too far in future/, "token lifetime too long"],
  [/^Invalid issuer/, "token issuer is not Google"],
  [/^Wrong recipient/, "token audience does not match"],
  [/^(No issue time|No expiration time|iat field|exp field)/, "token has no valid exp or iat"],
  [/^(Wrong number of segments|Can't parse token)/, "malformed token"],
  [/^No pem found/, "token key id is not among the signing certificates"],
];

function libraryRefusal(error: unknown, token: string): Refusal {
  const message = error instanceof Error ? error.message : "";
  for (const [pattern, reason] of LIBRARY_REFUSALS) {
    if (pattern.test(message)) return { status: 401, reason };
  }
  // Not a verdict on the token (a PEM node:crypto cannot read, a library change): 503, so the
  // push is retried rather than dropped, and the ERROR line shows what to fix.
  return { status: 503, reason: `token could not be verified: ${scrub(errorText(error), token)}` };
}

/** A library or user message made fit for a log line: no token, no run-on text. */
function scrub(text: string, token: string): string {
  let clean = text;
  for (const part of [token, ...token.split(".")]) {
    if (part.length >= 8) clean = clean.split(part).join("[token]");
  }
  return clean.length > 300 ? `${clean.slice(0, 297)}...` : clean;
}

function isSeconds(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
