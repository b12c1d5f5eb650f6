// google-auth-library, the optional peer that checks a token's RS256 signature: imported when a
// verifier is built, and the phrases of its refusals made into reasons that never quote the token.
import { InvalidConfiguration } from "../../core/errors.js";
import { errorText } from "../../core/logger.js";
import { importPeer } from "../../core/peer.js";
import { type Refusal, scrub } from "./verdict.js";

/** The parts of google-auth-library this module calls (the same in 9.x and 10.x). */
export interface OAuth2ClientLike {
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

/** Why the library could not be had: importPeer's and createClient's texts name the fix. */
export function loadFailure(error: unknown): string {
  return error instanceof InvalidConfiguration
    ? error.message
    : `push authentication could not load google-auth-library: ${errorText(error)}`;
}

/**
 * The one client of a verifier, imported when the verifier is built. It holds at most one
 * client (or the import under way); a failed import is dropped, so the next push tries again
 * (the package may be deployed by then).
 */
export class GoogleAuthLoader {
  private client: Promise<OAuth2ClientLike> | undefined;

  constructor(private readonly certificatesUrl: string | undefined) {}

  load(): Promise<OAuth2ClientLike> {
    if (this.client === undefined) {
      const loading = importPeer(
        "push authentication",
        "google-auth-library",
        () => import("google-auth-library"),
      ).then((module) => createClient(module as unknown as GoogleAuthModule, this.certificatesUrl));
      loading.catch(() => {
        if (this.client === loading) this.client = undefined;
      });
      this.client = loading;
    }
    return this.client;
  }
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

export function libraryRefusal(error: unknown, token: string): Refusal {
  const message = error instanceof Error ? error.message : "";
  for (const [pattern, reason] of LIBRARY_REFUSALS) {
    if (pattern.test(message)) return { status: 401, reason };
  }
  // Not a verdict on the token (a PEM node:crypto cannot read, a library change): 503, so the
  // push is retried rather than dropped, and the ERROR line shows what to fix.
  return { status: 503, reason: `token could not be verified: ${scrub(errorText(error), token)}` };
}
