// The `auth` option of idempotentHttp and the context of createPushVerifier, each checked once
// where it enters: a misspelt or malformed security option must not silently widen who may push.
import { isArraySafe } from "../../core/describe.js";
import { InvalidConfiguration } from "../../core/errors.js";
import { guardLogger, jsonLogger } from "../../core/logger.js";
import type { Logger } from "../../core/types.js";
import { functionOption, knownOptions, readOptions, stringOption } from "../../core/validate.js";

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

const AUTH_OPTION_NAMES = ["audience", "serviceAccountEmail", "certificates"] as const;
const AUTH_OPTIONS = knownOptions(AUTH_OPTION_NAMES);
const AUDIENCE = /^[^\s\p{Cc}]{1,2048}$/u;
const EMAIL = /^[^\s@]{1,200}@[^\s@]{1,200}$/u;

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

const CONTEXT_OPTION_NAMES = ["logger", "now", "certificatesUrl"] as const;

/** A {@link PushVerifierContext} from a caller, its keys checked (a misspelt one refused). */
export function readVerifierContext(context: unknown): PushVerifierContext {
  return readOptions(
    "createPushVerifier() context",
    context,
    true,
    CONTEXT_OPTION_NAMES,
  ) as PushVerifierContext;
}

/** A {@link PushVerifierContext} with its defaults applied and each field checked. */
export interface VerifierSettings {
  readonly logger: Logger;
  readonly now: () => number;
  readonly certificatesUrl: string | undefined;
}

export function resolveVerifierContext(context: PushVerifierContext): VerifierSettings {
  return {
    logger: guardLogger(context.logger ?? jsonLogger),
    now: functionOption<() => number>("now", context.now) ?? Date.now,
    certificatesUrl: stringOption(
      "certificatesUrl",
      context.certificatesUrl,
      /^https?:\/\/\S+$/u,
      "an http(s) URL",
    ),
  };
}
