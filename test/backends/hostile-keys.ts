// The hostile-keys property, shared by hostile-keys.test.ts (memory, Redis, SQL) and
// datastore.test.ts and firestore.test.ts (which reuse their emulator: two more JVMs beside
// theirs made the contract's 400 ms leases flaky on a busy machine).
//
// Hostile keys through lock(), 8 callers racing per key: emoji and surrogate pairs, RTL
// marks, NFC vs NFD forms of one text, SQL and Lua metacharacters, Redis {hash} tags,
// whitespace and case variants, exactly 1,024 bytes. Every distinct valid key is its own
// record and runs its body exactly once; an invalid key (lone surrogate, U+0000, empty,
// 1,025 bytes) is refused with InvalidKey and its body never runs.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_KEY_BYTES } from "../../src/core/constants.js";
import type { LockBackend } from "../../src/core/port.js";
import { lock } from "../../src/core/verbs/lock.js";
import { silentLogger } from "../support/logger.js";

const SEED = Number(process.env.FC_SEED ?? 1024);
const CALLERS = 8;
const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

// --- the keys -------------------------------------------------------------------------------

const bytesOf = (key: string) => Buffer.byteLength(key, "utf8");

/** The rule, restated independently of assertValidKey. */
function isValidKey(key: string): boolean {
  if (key.length === 0 || key.includes("\u0000") || bytesOf(key) > MAX_KEY_BYTES) return false;
  return /^(?:[^\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/.test(key);
}

const fragment = fc.constantFrom(
  // SQL and Lua metacharacters
  "'",
  '"',
  ";",
  "--",
  "%s",
  "%",
  "_",
  "\\",
  "`",
  "]]",
  "[[",
  "$1",
  "?",
  ":key",
  "@key",
  "/*",
  "*/",
  "' OR '1'='1",
  "'); DROP TABLE idempotency_records; --",
  "\r\n",
  "/",
  "..",
  // Redis hash tags
  "{",
  "}",
  "{tag}",
  "{}",
  // surrogate pairs and emoji (ZWJ sequences, skin tones, flags, the last code point)
  "🙂",
  "👍🏽",
  "🏳️‍🌈",
  "🇯🇵",
  "𝕏",
  "\u{10FFFF}",
  // right-to-left text and marks
  "\u200F",
  "\u200E",
  "\u202E",
  "\u2066",
  "שלום",
  "مرحبا",
  // whitespace that is not a space
  "\u00A0",
  "\t",
  "\u3000",
  "\u200B",
  "\uFEFF",
);
const word = fc.stringMatching(/^[a-z]{1,4}$/);
const mixed = fc
  .tuple(word, fc.array(fragment, { minLength: 1, maxLength: 5 }))
  .map(([w, parts]) => `${w}${parts.join("")}`);

/** Each group is a handful of keys that a careless store might fold into one record. */
const group: fc.Arbitrary<string[]> = fc.oneof(
  // metacharacters, tags, emoji, RTL: one key
  mixed.map((key) => [key]),
  // whitespace and case: 'a', 'a ', 'A' … distinct (the MySQL PAD SPACE / _ci pitfall)
  word.map((w) => [w, `${w} `, `${w}  `, ` ${w}`, w.toUpperCase(), `${w}\t`, `${w}\u00A0`]),
  // one text in NFC and in NFD: distinct records
  fc
    .constantFrom("é", "Å", "ñ", "ệ", "한국어", "Ǖ", "café", "Amélie", "ö\u0301")
    .map((text) => [text.normalize("NFC"), text.normalize("NFD")]),
  // Redis hash tags: keys that share a tag, or only look like one
  word.map((w) => [`{${w}}a`, `{${w}}b`, `a{${w}}`, `{${w}}`, `{{${w}}}`]),
  // exactly 1,024 bytes, and one byte more (refused)
  fc.tuple(mixed, fc.constantFrom("a", "é", "€", "🙂")).map(([head, unit]) => {
    const room = MAX_KEY_BYTES - bytesOf(head);
    const units = unit.repeat(Math.max(0, Math.floor(room / bytesOf(unit))));
    const key = `${head}${units}${"a".repeat(room - bytesOf(units))}`;
    return [key, `${key}a`];
  }),
  // malformed: lone surrogates, NUL, empty (refused)
  fc
    .tuple(mixed, fc.constantFrom("\uD800", "\uDBFF", "\uDC00", "\uDFFF", "\u0000", "\uDE00\uD83D"))
    .map(([key, bad]) => [`${key}${bad}`, `${bad}${key}`]),
  fc.constant<string[]>(["", "\u0000", "\uD83D"]),
);
const keySets = fc
  .array(group, { minLength: 1, maxLength: 3 })
  .map((groups) => [...new Set(groups.flat())]);

/** What a store that mangled an invalid key might have written instead. */
const mangled = (key: string) => key.replace(/[\uD800-\uDFFF]/g, "\uFFFD").replaceAll("\u0000", "");

async function race(backend: LockBackend, keys: string[]): Promise<void> {
  const runs = new Map<string, number>();
  const settled = await Promise.all(
    keys.map(async (key) => ({
      key,
      results: await Promise.allSettled(
        Array.from({ length: CALLERS }, () =>
          lock(key, { backend, leaseMs: 60_000, logger: silentLogger }, async () => {
            runs.set(key, (runs.get(key) ?? 0) + 1);
            await sleep(5);
          }),
        ),
      ),
    })),
  );
  const valid = new Set(keys.filter(isValidKey));
  for (const { key, results } of settled) {
    const codes = results.map((r) =>
      r.status === "fulfilled" ? "ran" : (r.reason as { code?: string }).code,
    );
    const label = JSON.stringify(key).slice(0, 80);
    if (valid.has(key)) {
      expect(runs.get(key), `body runs for ${label}`).toBe(1);
      expect(
        codes.filter((c) => c === "ran"),
        label,
      ).toHaveLength(1);
      for (const code of codes.filter((c) => c !== "ran")) {
        expect(["DUPLICATE", "IN_PROGRESS"], label).toContain(code);
      }
    } else {
      expect(runs.get(key), `body runs for ${label}`).toBeUndefined();
      expect(codes, label).toEqual(Array(CALLERS).fill("INVALID_KEY"));
      // The backend refuses it by itself too, not only lock() in front of it.
      await expect(backend.claim(key, 60_000)).rejects.toMatchObject({ code: "INVALID_KEY" });
    }
  }
  // Each valid key is a done record of its own; nothing was written for an invalid one.
  for (const key of valid) expect(await backend.claim(key, 60_000)).toEqual({ status: "done" });
  for (const key of new Set(keys.filter((k) => !valid.has(k)).map(mangled))) {
    if (!isValidKey(key) || valid.has(key)) continue;
    expect(await backend.claim(key, 60_000)).toMatchObject({ status: "won", claim: { key } });
  }
}

/**
 * Register the property for one backend: `make` gives a backend over a store of its own
 * (prefix, table, namespace, collection) for each run; `runs` is fast-check's numRuns.
 */
export function describeHostileKeys(
  name: string,
  make: () => Promise<LockBackend>,
  runs: number,
): void {
  describe(`hostile keys: ${name}`, () => {
    it(`${CALLERS} racing lock() calls per key: one body per distinct valid key, InvalidKey for the rest`, async () => {
      const started = Date.now();
      await fc.assert(
        fc.asyncProperty(keySets, async (keys) => {
          const backend = await make();
          try {
            await race(backend, keys);
          } finally {
            await backend.close?.();
          }
        }),
        { seed: SEED, numRuns: runs },
      );
      console.info(`[hostile keys] ${name}: ${runs} runs in ${Date.now() - started} ms`);
    }, 180_000);
  });
}
