// inspect's text shows what a record keeps beyond its lease, read through once()'s markers.
import { describe, expect, it } from "vitest";
import { recordText } from "../../src/cli/inspect.js";

const base = {
  key: "orders:1",
  state: "done" as const,
  fencingId: 7,
  leaseExpiresAt: 1_000,
  expiresAt: 9_000_000_000_000,
  now: 2_000,
};

describe("inspect text: fingerprint and result", () => {
  it("a recorded value, undefined, and a result not recorded", () => {
    const text = recordText("orders:1", {
      ...base,
      fingerprint: "sha256:ab",
      result: 'r:{"id":1}',
    });
    expect(text).toMatch(/^fingerprint {2}"sha256:ab"$/m);
    expect(text).toMatch(/^result {7}"\{\\"id\\":1\}"$/m);
    expect(recordText("k", { ...base, result: "u:" })).toContain("undefined (recorded by once())");
    expect(recordText("k", { ...base, result: "n:too large" })).toContain(
      'none recorded: "too large"',
    );
  });

  it("a long result is cut at 200 characters and says how long it was; none shows no row", () => {
    const text = recordText("k", { ...base, result: `r:${"x".repeat(500)}` });
    expect(text).toContain("… (500 characters)");
    expect(recordText("k", base)).not.toMatch(/^(result|fingerprint) /m);
  });
});
