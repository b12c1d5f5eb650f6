// The `auth` option checked where it enters: every refusal names the field.
import { describe, expect, it } from "vitest";
import { InvalidConfiguration } from "../../../src/core/errors.js";
import {
  type PushAuthOptions,
  resolvePushAuthOptions,
} from "../../../src/surfaces/push-auth/options.js";
import { createPushVerifier } from "../../../src/surfaces/push-auth/verifier.js";

describe("push authentication options", () => {
  it.each([
    [undefined, "auth needs an options object"],
    [{}, "auth.audience is required"],
    [{ audience: "" }, "auth.audience must be a non-empty string"],
    [{ audience: "has space" }, "auth.audience must be"],
    [{ audience: 42 }, "auth.audience must be"],
    [{ audience: "a", serviceAccountEmail: "not-an-email" }, "auth.serviceAccountEmail must be"],
    [{ audience: "a", serviceAccountEmail: [] }, "auth.serviceAccountEmail must name at least one"],
    [{ audience: "a", serviceAccountEmail: ["x@y.z", 7] }, "auth.serviceAccountEmail must be"],
    [{ audience: "a", certificates: {} }, "auth.certificates must be a function"],
    [
      { audience: "a", serviceAccountEmails: "x@y.z" },
      "`serviceAccountEmails` is not an option of auth; did you mean `serviceAccountEmail`?",
    ],
  ])("refuses %j at build time, naming the field", (auth, message) => {
    expect(() => createPushVerifier(auth as PushAuthOptions)).toThrow(InvalidConfiguration);
    expect(() => resolvePushAuthOptions(auth)).toThrow(message);
  });

  it("turns a throwing getter into a configuration error", () => {
    const hostile = {
      get audience(): string {
        throw new Error("boom");
      },
    };
    expect(() => resolvePushAuthOptions(hostile)).toThrow(InvalidConfiguration);
  });

  it("keeps one email or several, lower-cased", () => {
    const one = resolvePushAuthOptions({ audience: "a", serviceAccountEmail: "Push@P.iam.x" });
    expect([...(one.serviceAccountEmails ?? [])]).toEqual(["push@p.iam.x"]);
    const two = resolvePushAuthOptions({ audience: "a", serviceAccountEmail: ["a@b.c", "d@e.f"] });
    expect(two.serviceAccountEmails?.size).toBe(2);
  });
});
