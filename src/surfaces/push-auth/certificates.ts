// The signing certificates a token is checked against: Google's, through google-auth-library's
// fetch and cache, or the `certificates` option's.
import { describe } from "../../core/validate.js";
import { isPlainObject } from "./claims.js";
import type { OAuth2ClientLike } from "./google-auth.js";

/**
 * Google's certificates for one verifier. It holds at most one fetch, while it runs: the
 * pushes that arrive meanwhile (a cold start) share it. Between fetches it holds nothing; the
 * library's own cache answers until the response's Cache-Control max-age lapses.
 */
export class GoogleCertificates {
  private fetching: Promise<unknown> | undefined;

  fetch(oauth: OAuth2ClientLike): Promise<unknown> {
    this.fetching ??= oauth
      .getFederatedSignonCertsAsync()
      .then((response) => response.certs)
      .finally(() => {
        this.fetching = undefined;
      });
    return this.fetching;
  }
}

/** A certificate source's answer as PEM strings by kid, or a throw naming what is wrong. */
export function pemsByKid(source: unknown): Record<string, string> {
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
