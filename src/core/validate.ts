import { MAX_KEY_BYTES } from "./constants.js";
import { InvalidConfiguration, InvalidKey } from "./errors.js";

const encoder = new TextEncoder();

/**
 * Reject a key no backend may store, before any I/O: throws {@link InvalidKey} unless `key`
 * is a non-empty string of at most {@link MAX_KEY_BYTES} UTF-8 bytes. Useful in a custom
 * {@link LockBackend} or a `key` function.
 *
 * @example
 * ```ts
 * import { assertValidKey } from "gcp-pubsub-idempotency";
 *
 * const key: unknown = JSON.parse('"orders:42"');
 * assertValidKey(key); // throws InvalidKey otherwise
 * console.log(key.toUpperCase()); // narrowed to string
 * ```
 */
export function assertValidKey(key: unknown): asserts key is string {
  if (typeof key !== "string") {
    throw new InvalidKey(`an idempotency key must be a string, got ${describe(key)}`);
  }
  if (key.length === 0) throw new InvalidKey("an idempotency key must not be empty");
  // A UTF-16 length above the byte cap's third can still fit; only encode when it might not.
  if (key.length * 3 > MAX_KEY_BYTES) {
    const bytes = encoder.encode(key).length;
    if (bytes > MAX_KEY_BYTES) {
      throw new InvalidKey(
        `an idempotency key may be at most ${MAX_KEY_BYTES} UTF-8 bytes, got ${bytes}`,
      );
    }
  }
}

/** A positive whole number of milliseconds, or a configuration error naming the option. */
export function assertPositiveMs(name: string, value: unknown): asserts value is number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidConfiguration(
      `${name} must be a positive whole number of milliseconds, got ${describe(value)}`,
    );
  }
}

/** Zero or a positive whole number of milliseconds. */
export function assertNonNegativeMs(name: string, value: unknown): asserts value is number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidConfiguration(
      `${name} must be zero or a positive whole number of milliseconds, got ${describe(value)}`,
    );
  }
}

export function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value.slice(0, 40));
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return `${typeof value} ${String(value)}`;
  }
  return typeof value;
}
