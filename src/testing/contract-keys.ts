// The key rule on every backend (non-empty, well-formed Unicode, no U+0000, at most 1,024 UTF-8
// bytes), the lease checked at call time, and the longest lease and ttl read back.
import { MAX_KEY_BYTES, MAX_LEASE_MS, MAX_TTL_MS } from "../core/constants.js";
import type { Claim } from "../core/port.js";
import { type ContractContext, DEFAULT_CASE_TIMEOUT_MS, won } from "./contract-context.js";
import { expect } from "./expect.js";

/**
 * The key rule (non-empty, well-formed Unicode, no U+0000, at most 1,024 UTF-8 bytes), the
 * lease checked at call time, and the longest lease and ttl read back, on one backend.
 */
export function describeKeyAndLimitCases(c: ContractContext): void {
  const { describe, it, target, freshKey, withBackend } = c;
  const encoder = new TextEncoder();
  const bytesOf = (key: string) => encoder.encode(key).length;
  /** `prefix` filled up to exactly `bytes` UTF-8 bytes with 4-, 2- and 1-byte characters. */
  const fillTo = (prefix: string, bytes: number) => {
    let rest = bytes - bytesOf(prefix);
    const emoji = "🙂".repeat(Math.floor(rest / 8));
    rest -= bytesOf(emoji);
    const accents = "é".repeat(Math.floor(rest / 4));
    rest -= bytesOf(accents);
    return `${prefix}${emoji}${accents}${"k".repeat(rest)}`;
  };
  const refusedKey = { code: "INVALID_KEY" };
  const refusedOption = { code: "INVALID_CONFIGURATION" };

  describe("keys: non-empty, well-formed Unicode, no U+0000, at most 1,024 UTF-8 bytes", () => {
    withBackend(
      "a lone surrogate, U+0000 or an empty key is refused with InvalidKey",
      async (b) => {
        const base = freshKey("malformed");
        const malformed = [
          `${base}:k\uD800`,
          `${base}:k\uDC00`,
          `${base}:a\u0000b`,
          `${base}:\uDC00\uD800`, // a low surrogate before a high one is no pair
          `${base}:${"🙂".slice(0, 1)}`, // half an emoji
          "",
        ];
        for (const key of malformed) {
          await expect(b.claim(key, 60_000)).rejects.toMatchObject(refusedKey);
        }
        // Nothing was written: not under the key as a store would have mangled it (U+FFFD,
        // "?", the NUL dropped or cut at), nor under anything else.
        const lookalikes = [
          `${base}:k`,
          `${base}:k\uFFFD`,
          `${base}:k?`,
          `${base}:a`,
          `${base}:ab`,
          `${base}:a\uFFFDb`,
          `${base}:\uFFFD\uFFFD`,
          `${base}:\uFFFD`,
        ];
        // Each is won: no record of it, live or done, was written.
        for (const key of lookalikes) expect(won(await b.claim(key, 60_000)).key).toBe(key);
      },
    );

    withBackend("complete, release and renew refuse a malformed claim key", async (b) => {
      const base = freshKey("malformed-claim");
      for (const key of [`${base}:k\uD800`, `${base}:a\u0000b`, ""]) {
        const claim: Claim = { key, fencingId: 1, leaseExpiresAt: Date.now() + 60_000 };
        await expect(b.complete(claim)).rejects.toMatchObject(refusedKey);
        await expect(b.release(claim)).rejects.toMatchObject(refusedKey);
        if (b.renew) await expect(b.renew(claim, 60_000)).rejects.toMatchObject(refusedKey);
      }
      expect(won(await b.claim(`${base}:k\uFFFD`, 60_000)).key).toBe(`${base}:k\uFFFD`);
    });

    withBackend("look-alike keys are distinct records", async (b) => {
      const base = freshKey("lookalike");
      const keys = [
        "k",
        "k\uFFFD",
        "k\uFFFD\uFFFD",
        "k?",
        "K",
        "k ",
        "k\u00A0", // no-break space
        "k\u200B", // zero-width space
        "\uFF4B", // fullwidth k
        "\u00E9", // é, NFC
        "e\u0301", // é, NFD
        "\u00C5", // Å
        "\u212B", // Angstrom sign (NFC folds it to Å)
        "\uFB01", // the fi ligature (NFKC folds it to fi)
        "fi",
        "\u200Fk", // a right-to-left mark first
      ].map((suffix) => `${base}:${suffix}`);
      expect(new Set(keys).size).toBe(keys.length);
      const claims: Claim[] = [];
      for (const key of keys) {
        const claim = won(await b.claim(key, 60_000));
        expect(claim.key).toBe(key);
        claims.push(claim);
      }
      for (const claim of claims) expect(await b.complete(claim)).toBe(true);
      for (const key of keys) expect(await b.claim(key, 60_000)).toEqual({ status: "done" });
    });

    withBackend(
      "a 1,024-byte key is taken; a 1,025-byte one is refused and writes nothing",
      async (b) => {
        const base = freshKey("bytes");
        const longest = fillTo(`${base}:`, MAX_KEY_BYTES);
        expect(bytesOf(longest)).toBe(MAX_KEY_BYTES);
        // One byte over: the first is `longest` and one more byte, so a store that cut keys
        // at 1,024 bytes would have written `longest`; the second ends in a 2-byte character.
        const over = [`${longest}k`, `${fillTo(`${base}:`, MAX_KEY_BYTES - 1)}é`];
        for (const key of over) {
          expect(bytesOf(key)).toBe(MAX_KEY_BYTES + 1);
          await expect(b.claim(key, 60_000)).rejects.toMatchObject(refusedKey);
        }
        const claim = won(await b.claim(longest, 60_000));
        expect(claim.key).toBe(longest);
        expect(await b.claim(longest, 60_000)).toEqual({
          status: "held",
          leaseExpiresAt: claim.leaseExpiresAt,
        });
        expect(await b.complete(claim)).toBe(true);
        expect(await b.claim(longest, 60_000)).toEqual({ status: "done" });
      },
    );
  });

  describe("leases and ttls at their limits", () => {
    const badLeases: unknown[] = [
      0,
      -1,
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      MAX_LEASE_MS + 1,
      Number.MAX_SAFE_INTEGER,
      "60000",
      undefined,
      null,
    ];

    withBackend(
      "a lease that is not a whole number of ms from 1 to MAX_LEASE_MS is refused; nothing is written",
      async (b) => {
        const key = freshKey("bad-lease");
        for (const lease of badLeases) {
          await expect(b.claim(key, lease as number)).rejects.toMatchObject(refusedOption);
        }
        const claim = won(await b.claim(key, 60_000));
        if (b.renew) {
          for (const lease of badLeases) {
            await expect(b.renew(claim, lease as number)).rejects.toMatchObject(refusedOption);
          }
        }
        expect(await b.claim(key, 60_000)).toEqual({
          status: "held",
          leaseExpiresAt: claim.leaseExpiresAt,
        });
        expect(await b.complete(claim)).toBe(true);
      },
    );

    it(
      "the longest lease (MAX_LEASE_MS) under the longest ttl (MAX_TTL_MS) reads back",
      async () => {
        const b = await target.create({ ttlMs: MAX_TTL_MS });
        try {
          const key = freshKey("max");
          const claim = won(await b.claim(key, MAX_LEASE_MS));
          expect(Number.isSafeInteger(claim.fencingId)).toBe(true);
          expect(Number.isSafeInteger(claim.leaseExpiresAt)).toBe(true);
          expect(await b.claim(key, MAX_LEASE_MS)).toEqual({
            status: "held",
            leaseExpiresAt: claim.leaseExpiresAt,
          });
          if (b.renew) expect(await b.renew(claim, MAX_LEASE_MS)).toBe(true);
          expect((await b.claim(key, 1)).status).toBe("held");
          expect(await b.complete(claim)).toBe(true);
          expect(await b.claim(key, MAX_LEASE_MS)).toEqual({ status: "done" });
          expect(await b.complete(claim)).toBe(true); // a retried complete reads it back too

          // Released: the record (lease now, expiry in ten years) is read back and reclaimed.
          const other = freshKey("max-release");
          const first = won(await b.claim(other, MAX_LEASE_MS));
          await b.release(first);
          const second = won(await b.claim(other, MAX_LEASE_MS));
          expect(second.fencingId).toBe(first.fencingId + 2);
          expect(await b.complete(second)).toBe(true);
          expect(await b.claim(other, 1)).toEqual({ status: "done" });
        } finally {
          await b.close?.();
        }
      },
      DEFAULT_CASE_TIMEOUT_MS,
    );
  });
}
