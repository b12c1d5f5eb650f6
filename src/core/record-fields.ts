// The checks of what a record keeps beyond its lease: a fingerprint and an encoded result,
// where they enter (a verb's options, a backend's public claim and complete).
import { MAX_KEY_BYTES } from "./constants.js";
import { InvalidConfiguration } from "./errors.js";
import { describe, keyFlaw, readProperty } from "./validate.js";

const encoder = new TextEncoder();

/**
 * A fingerprint as a verb's `fingerprint` option or a surface's fingerprint function gives it:
 * undefined (no comparison), or a non-empty, well-formed string (no NUL, no lone surrogate) of
 * at most {@link MAX_KEY_BYTES} UTF-8 bytes — every store keeps it as text beside the key.
 */
export function fingerprintOption(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.length === 0) {
    throw new InvalidConfiguration(
      `${name} must be a non-empty string naming the payload (or undefined), got ${describe(value)}`,
    );
  }
  if (value.length * 3 > MAX_KEY_BYTES && encoder.encode(value).length > MAX_KEY_BYTES) {
    throw new InvalidConfiguration(
      `${name} may be at most ${MAX_KEY_BYTES} UTF-8 bytes, got ${encoder.encode(value).length}; hash a large payload (the surfaces' fingerprint: true does)`,
    );
  }
  const flaw = keyFlaw(value);
  if (flaw !== undefined) throw new InvalidConfiguration(`${name} ${flaw}`);
  return value;
}

/** True when `text` can be stored as text by every backend: no NUL, no lone surrogate. */
export function storableText(text: string): boolean {
  return keyFlaw(text) === undefined;
}

/**
 * The claim options a backend's public `claim` was given: its fingerprint, checked by the
 * rule of {@link fingerprintOption}. For a backend's direct callers; the engine checked it.
 */
export function claimFingerprint(options: unknown): string | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== "object") {
    throw new InvalidConfiguration(
      `claim options must be an object ({ fingerprint }), got ${describe(options)}`,
    );
  }
  return fingerprintOption(
    "claim options.fingerprint",
    readProperty("claim options", options, "fingerprint"),
  );
}

/** The encoded result a backend's public `complete` was given: undefined, or storable text. */
export function completeResult(result: unknown, maxBytes: number): string | undefined {
  if (result === undefined) return undefined;
  if (typeof result !== "string" || !storableText(result)) {
    throw new InvalidConfiguration(
      `complete's result must be well-formed text without U+0000, got ${describe(result)}`,
    );
  }
  if (result.length * 3 > maxBytes && encoder.encode(result).length > maxBytes) {
    throw new InvalidConfiguration(
      `complete's result may be at most ${maxBytes} UTF-8 bytes on this backend, got ${encoder.encode(result).length}`,
    );
  }
  return result;
}
