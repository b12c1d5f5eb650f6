// How once() records a result: any JSON value round-trips; what cannot be stored is marked,
// never thrown; the marker keeps "no result" apart from every value.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JSON_CODEC, recordResult, replayResult } from "../../../src/core/verbs/result.js";

const MAX = 64 * 1024;

describe("recordResult and replayResult", () => {
  it("every JSON value round-trips through the default codec", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const { text, unrecorded } = recordResult(value, JSON_CODEC, MAX);
        expect(unrecorded).toBeUndefined();
        const replay = replayResult("k", text, JSON_CODEC);
        expect(replay).toEqual({ replayed: true, value: JSON.parse(JSON.stringify(value)) });
      }),
      { numRuns: 500 },
    );
  });

  it("any string a codec returns is either recorded as it is or marked with why, never thrown", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 200 }),
        fc.integer({ min: 3, max: 300 }),
        (raw, max) => {
          const codec = { encode: () => raw, decode: (t: string) => t };
          const { text, unrecorded } = recordResult("v", codec, max);
          const replay = replayResult("k", text, codec);
          if (unrecorded === undefined) {
            expect(replay).toEqual({ replayed: true, value: raw });
            expect(new TextEncoder().encode(text).length).toBeLessThanOrEqual(max);
          } else {
            expect(replay.replayed).toBe(false);
            expect(text.startsWith("n:")).toBe(true);
          }
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it("undefined is its own marker; a record without a result says who completed it", () => {
    expect(recordResult(undefined, JSON_CODEC, MAX).text).toBe("u:");
    expect(replayResult("k", "u:", JSON_CODEC)).toEqual({ replayed: true, value: undefined });
    const none = replayResult("k", undefined, JSON_CODEC);
    expect(none.replayed).toBe(false);
    expect(!none.replayed && none.why).toContain("without a result");
  });

  it("an unknown marker is refused, not guessed", () => {
    expect(() => replayResult("k", "x:1", JSON_CODEC)).toThrow(/unknown marker/);
  });
});
