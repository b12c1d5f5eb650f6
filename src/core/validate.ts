import { MAX_KEY_BYTES, MAX_LEASE_MS, MAX_TTL_MS } from "./constants.js";
import { describe, isArraySafe } from "./describe.js";
import { InvalidConfiguration, InvalidKey } from "./errors.js";

// Everything that enters from outside is checked here, once, where it enters: keys before
// any I/O, options when the function or backend is built. Each refusal names the value.

const encoder = new TextEncoder();

/**
 * Reject a key no backend may store, before any I/O: throws {@link InvalidKey} unless `key`
 * is a non-empty, well-formed string (no lone surrogate, no U+0000) of at most
 * {@link MAX_KEY_BYTES} UTF-8 bytes. Useful in a custom {@link LockBackend} or a `key`
 * function.
 *
 * Why lone surrogates and NUL are refused: a lone surrogate has no UTF-8 encoding, so a
 * store would write U+FFFD and two distinct keys would share one record; PostgreSQL
 * `text` cannot hold U+0000 at all. Refusing both keeps one key, one record, everywhere.
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
  const flaw = keyFlaw(key);
  if (flaw !== undefined) throw new InvalidKey(`an idempotency key ${flaw}, got ${describe(key)}`);
}

/** Why a string is not storable as written, or undefined. Linear, no allocation. */
function keyFlaw(key: string): string | undefined {
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i);
    if (unit === 0) return `must not contain U+0000 (NUL; at index ${i})`;
    if (unit < 0xd800 || unit > 0xdfff) continue;
    const next = i + 1 < key.length ? key.charCodeAt(i + 1) : 0;
    if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      i++;
      continue;
    }
    return `must be well-formed Unicode (a lone surrogate U+${unit.toString(16).toUpperCase()} at index ${i})`;
  }
  return undefined;
}

/** A fencing id given to an operator call: a positive safe integer, as every store keeps it. */
export function assertFencingId(fencingId: unknown): asserts fencingId is number {
  if (typeof fencingId !== "number" || !Number.isSafeInteger(fencingId) || fencingId < 1) {
    throw new InvalidConfiguration(
      `a fencing id must be a positive whole number, got ${describe(fencingId)}`,
    );
  }
}

/** `name` must be a whole number of milliseconds in `[min, max]`. */
function assertMs(name: string, value: unknown, min: number, max: number, what: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidConfiguration(
      `${name} must be ${what} whole number of milliseconds up to ${max}, got ${describe(value)}`,
    );
  }
  return value;
}

/**
 * A positive whole number of milliseconds, at most `max` (default {@link MAX_LEASE_MS}), or
 * a configuration error naming the option.
 */
export function assertPositiveMs(
  name: string,
  value: unknown,
  max: number = MAX_LEASE_MS,
): asserts value is number {
  assertMs(name, value, 1, max, "a positive");
}

/** Zero or a positive whole number of milliseconds, at most `max` (default {@link MAX_LEASE_MS}). */
export function assertNonNegativeMs(
  name: string,
  value: unknown,
  max: number = MAX_LEASE_MS,
): asserts value is number {
  assertMs(name, value, 0, max, "zero or a positive");
}

/** A backend's `ttlMs`: positive, whole, at most {@link MAX_TTL_MS}; default when undefined. */
export function ttlOption(value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  return assertMs("ttlMs", value, 1, MAX_TTL_MS, "a positive");
}

/** The options argument of a constructor or surface: an object (or absent when `optional`). */
export function optionsObject(
  where: string,
  value: unknown,
  optional: boolean,
): Readonly<Record<string, unknown>> {
  if (value === undefined && optional) return {};
  if (value === null || typeof value !== "object" || isArraySafe(value)) {
    throw new InvalidConfiguration(`${where} needs an options object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

/**
 * Read the named options of `value` once each into a plain object, so every later check
 * and use sees one value (a getter that answers differently each time cannot slip a bad
 * value past its check). `value` must be an object (or absent when `optional`); `where`
 * names the owner in each refusal. A getter or Proxy trap that throws becomes an
 * {@link InvalidConfiguration} naming the option; unknown option names are not read.
 */
export function readOptions<K extends string>(
  where: string,
  value: unknown,
  optional: boolean,
  names: readonly K[],
): { readonly [P in K]?: unknown } {
  const options = optionsObject(where, value, optional) as Record<string, unknown>;
  const read: { [P in K]?: unknown } = {};
  // One try around the loop, and the refusal's text built only on a throw: this runs on
  // every lock() call.
  let name: K | undefined;
  try {
    for (name of names) read[name] = options[name];
  } catch {
    throw new InvalidConfiguration(
      `${where} option ${name} could not be read (its getter or proxy threw)`,
    );
  }
  return read;
}

/** One property, read once; a throwing getter or Proxy trap is a configuration error. */
export function readProperty(what: string, object: object, name: string): unknown {
  try {
    return (object as Record<string, unknown>)[name];
  } catch {
    throw new InvalidConfiguration(`${what} could not be read (its getter or proxy threw)`);
  }
}

/** An optional boolean option: `undefined` or a real boolean, never a truthy stand-in. */
export function booleanOption(name: string, value: unknown): boolean | undefined {
  if (value === undefined || typeof value === "boolean") return value;
  throw new InvalidConfiguration(`${name} must be true or false, got ${describe(value)}`);
}

/** A required function argument (a verb's body, a surface's handler), checked before any I/O. */
export function assertFunction(where: string, name: string, value: unknown): void {
  if (typeof value !== "function") {
    throw new InvalidConfiguration(`${where} needs a ${name} function, got ${describe(value)}`);
  }
}

/** An optional function option. */
export function functionOption<F>(name: string, value: unknown): F | undefined {
  if (value === undefined || typeof value === "function") return value as F | undefined;
  throw new InvalidConfiguration(`${name} must be a function, got ${describe(value)}`);
}

/** An optional string option that must match `pattern` (described by `allowed`). */
export function stringOption(
  name: string,
  value: unknown,
  pattern: RegExp,
  allowed: string,
): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !pattern.test(value)) {
    throw new InvalidConfiguration(`${name} must be ${allowed}, got ${describe(value)}`);
  }
  return value;
}

export { describe };
