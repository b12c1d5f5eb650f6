import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { firstTraceparent, parseTraceparent } from "../../src/core/trace-context.js";

const hex = (length: number) =>
  fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: length, maxLength: length });

describe("parseTraceparent", () => {
  it("reads a valid version-00 traceparent into a remote span context", () => {
    fc.assert(
      fc.property(hex(32), hex(16), hex(2), (traceId, spanId, flags) => {
        fc.pre(!/^0+$/.test(traceId) && !/^0+$/.test(spanId));
        expect(parseTraceparent(`00-${traceId}-${spanId}-${flags}`)).toEqual({
          traceId,
          spanId,
          traceFlags: Number.parseInt(flags, 16),
          isRemote: true,
        });
      }),
    );
  });

  it("a later version may append fields; version ff never is valid", () => {
    const value = `01-${"a".repeat(32)}-${"b".repeat(16)}-01-future`;
    expect(parseTraceparent(value)?.traceId).toBe("a".repeat(32));
    expect(parseTraceparent(`ff-${"a".repeat(32)}-${"b".repeat(16)}-01`)).toBeUndefined();
  });

  it("never throws, and accepts only the strict shape", () => {
    const strict = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[\x21-\x7e]*)?$/;
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.string(), fc.string({ unit: "binary" })), (value) => {
        const parsed = parseTraceparent(value);
        if (parsed !== undefined) {
          expect(typeof value === "string" && strict.test(value)).toBe(true);
          expect(parsed.traceId).not.toMatch(/^0+$/);
          expect(parsed.spanId).not.toMatch(/^0+$/);
        }
      }),
    );
  });

  it("firstTraceparent skips invalid candidates and arrays (a repeated header)", () => {
    const good = `00-${"c".repeat(32)}-${"d".repeat(16)}-00`;
    expect(firstTraceparent([good], "junk", undefined, good)?.spanId).toBe("d".repeat(16));
    expect(firstTraceparent([good], 7)).toBeUndefined();
  });
});
