// The accepted-token cache keeps its documented bound: the oldest token goes first.
import { describe, expect, it } from "vitest";
import {
  ACCEPTED_TOKENS_KEPT,
  type AcceptedToken,
  AcceptedTokens,
} from "../../../src/surfaces/push-auth/accepted-tokens.js";

const accepted = (subject: string): AcceptedToken => ({
  verdict: { ok: true, email: "push@p.iam.gserviceaccount.com", subject, expiresAt: 0 },
  payload: { sub: subject },
});

describe("AcceptedTokens", () => {
  it("keeps at most ACCEPTED_TOKENS_KEPT tokens, dropping the oldest", () => {
    const tokens = new AcceptedTokens();
    for (let i = 0; i <= ACCEPTED_TOKENS_KEPT; i++) tokens.keep(`t${i}`, accepted(`${i}`));
    expect(tokens.get("t0")).toBeUndefined();
    expect(tokens.get("t1")?.verdict.subject).toBe("1");
    expect(tokens.get(`t${ACCEPTED_TOKENS_KEPT}`)?.verdict.subject).toBe(`${ACCEPTED_TOKENS_KEPT}`);
  });

  it("finds nothing for no token", () => {
    const tokens = new AcceptedTokens();
    tokens.keep("t", accepted("1"));
    expect(tokens.get(undefined)).toBeUndefined();
  });
});
