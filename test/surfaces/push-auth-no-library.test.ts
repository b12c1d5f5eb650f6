// Push authentication where google-auth-library (an optional peer) is not installed: the
// verifier answers 503 (retried, never acked) and the ERROR line says what to install.
import { describe, expect, it, vi } from "vitest";
import { createPushVerifier } from "../../src/surfaces/push-auth.js";
import { createTestIdentity } from "../../src/testing/push-auth.js";
import { captureLogger } from "../support/logger.js";

vi.mock("google-auth-library", () => {
  throw Object.assign(new Error("Cannot find package 'google-auth-library'"), {
    code: "ERR_MODULE_NOT_FOUND",
  });
});

describe("push authentication without google-auth-library", () => {
  it("answers 503 naming the package to install, and refuses a junk header with 401 all the same", async () => {
    const identity = createTestIdentity();
    const logger = captureLogger();
    const verify = createPushVerifier(identity.auth, { logger });
    const result = await verify(identity.authorization());
    expect(result).toMatchObject({ ok: false, status: 503 });
    expect(result.ok ? "" : result.reason).toMatch(/npm install google-auth-library/);
    expect(logger.at("ERROR").map((line) => line.message)).toEqual([
      expect.stringContaining("needs google-auth-library"),
    ]);
    expect(await verify(undefined)).toMatchObject({ ok: false, status: 401 });
  });
});
