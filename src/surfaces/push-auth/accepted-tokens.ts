// The tokens a verifier accepted. Pub/Sub sends one token with many pushes until it nears
// expiry; a token seen before had its signature and identity checked then, and the same bytes
// cannot verify differently, so its next pushes cost the pre-screen's time checks alone
// (`npm run bench -- --only gateway`: "with `auth`, one token for every push" against "a new
// token each push", about 20 times as many pushes a second in BENCHMARKS.md).
import type { PushAuthAccepted } from "./verdict.js";

/** How many accepted tokens a verifier keeps: one per push identity and hour in practice. */
export const ACCEPTED_TOKENS_KEPT = 256;

/** A token that verified: the verdict it earned, and its payload for the time checks. */
export interface AcceptedToken {
  readonly verdict: PushAuthAccepted;
  readonly payload: Record<string, unknown>;
}

/**
 * At most {@link ACCEPTED_TOKENS_KEPT} tokens, the oldest out first. Only accepted tokens are
 * kept, and only Google can mint one, so pushes cannot flood it.
 */
export class AcceptedTokens {
  private readonly tokens = new Map<string, AcceptedToken>();

  get(token: string | undefined): AcceptedToken | undefined {
    return token === undefined ? undefined : this.tokens.get(token);
  }

  keep(token: string, accepted: AcceptedToken): void {
    if (this.tokens.size >= ACCEPTED_TOKENS_KEPT) {
      this.tokens.delete(this.tokens.keys().next().value as string);
    }
    this.tokens.set(token, accepted);
  }
}
