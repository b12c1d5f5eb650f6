// The recordIds option and the ids it gives, without a store: every id is legal and
// reversible, a key always gets the same one, and a bad option is refused by name. What the
// stores do with them is google-record-ids.ts, run on each emulator.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DatastoreLock, decodeName, encodeName } from "../../src/backends/datastore/index.js";
import {
  decodeDocumentId,
  encodeDocumentId,
  FirestoreLock,
} from "../../src/backends/firestore/index.js";
import { isSpreadId, spreadPrefix } from "../../src/backends/google/record-ids.js";
import { SpannerLock } from "../../src/backends/spanner/index.js";
import { InvalidConfiguration } from "../../src/core/errors.js";

const anyKey = fc.string({ unit: "grapheme", minLength: 1, maxLength: 64 });

describe("record ids", () => {
  it("spread ids: the key's own prefix, legal and reversible on both stores", () => {
    fc.assert(
      fc.property(anyKey, (key) => {
        const prefix = spreadPrefix(key);
        expect(prefix).toMatch(/^[0-9a-f]{4}~$/);
        expect(spreadPrefix(key)).toBe(prefix);
        for (const id of [encodeName(key), encodeDocumentId(key)]) {
          expect(id.startsWith(prefix)).toBe(true);
          expect(isSpreadId(id)).toBe(true);
        }
        expect(decodeName(encodeName(key))).toBe(key);
        expect(decodeDocumentId(encodeDocumentId(key))).toBe(key);
        expect(encodeDocumentId(key)).not.toContain("/");
      }),
      { numRuns: 500 },
    );
  });

  it("plain ids are 0.1's and never read as spread", () => {
    fc.assert(
      fc.property(anyKey, (key) => {
        expect(encodeName(key, "plain")).toBe(`k${key}`);
        expect(isSpreadId(encodeName(key, "plain"))).toBe(false);
        expect(isSpreadId(encodeDocumentId(key, "plain"))).toBe(false);
        expect(decodeName(encodeName(key, "plain"))).toBe(key);
        expect(decodeDocumentId(encodeDocumentId(key, "plain"))).toBe(key);
      }),
      { numRuns: 500 },
    );
  });

  it("rising keys spread over the prefixes", () => {
    const prefixes = new Map<string, number>();
    for (let i = 0; i < 4096; i++) {
      const prefix = spreadPrefix(`orders:${100_000 + i}`).slice(0, 1);
      prefixes.set(prefix, (prefixes.get(prefix) ?? 0) + 1);
    }
    // 16 first hex digits, 256 keys each if even: every one within a third of that.
    expect(prefixes.size).toBe(16);
    for (const count of prefixes.values()) expect(Math.abs(count - 256)).toBeLessThan(256 / 3);
  });

  it('the option: "spread" by default, each layout taken, anything else refused by name', () => {
    const database = { getTransaction: async () => [] } as never;
    const locks = {
      datastore: (recordIds?: unknown) => new DatastoreLock({ recordIds } as never),
      firestore: (recordIds?: unknown) => new FirestoreLock({ recordIds } as never),
      spanner: (recordIds?: unknown) => new SpannerLock({ database, recordIds } as never),
    };
    for (const make of Object.values(locks)) {
      expect(make().recordIds).toBe("spread");
      for (const layout of ["spread", "plain", "migrating"]) {
        expect(make(layout).recordIds).toBe(layout);
      }
      for (const bad of ["Spread", "hashed", "", null, 1, {}]) {
        expect(() => make(bad)).toThrow(InvalidConfiguration);
        expect(() => make(bad)).toThrow(/recordIds must be "spread".*"plain".*"migrating"/);
      }
    }
  });
});
