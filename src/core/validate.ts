import { withTtl } from "../backends/registry.js";
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
export function keyFlaw(key: string): string | undefined {
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
 * The option names an owner (a verb, a surface, a backend constructor, a nested option such
 * as `auth`) takes: made once, at module load, so the per-call check allocates nothing.
 */
export interface KnownOptions {
  readonly names: ReadonlySet<string>;
  /**
   * Whose options these are: a verb's or a surface's (`lock`: a ttl given there belongs to
   * the backend), a backend constructor's (`backend`: a lease belongs to the verb), or a
   * nested option's.
   */
  readonly role: "lock" | "backend" | "nested";
}

/** The {@link KnownOptions} of an owner taking `names`. */
export function knownOptions(
  names: readonly string[],
  role: KnownOptions["role"] = "nested",
): KnownOptions {
  return { names: new Set(names), role };
}

/**
 * Refuse an option name `known` does not list, so a misspelt option never runs silently
 * with its default: the {@link InvalidConfiguration} names the key and the closest known
 * name ("`lease` is not an option of idempotentHttp; did you mean `leaseMs`?"), or lists
 * the known ones. Own enumerable string keys only, each tested once against a Set; the text
 * is built only on a refusal (this runs on every lock() call).
 */
export function assertKnownOptions(where: string, options: object, known: KnownOptions): void {
  let keys: string[];
  try {
    keys = Object.keys(options);
  } catch {
    throw new InvalidConfiguration(
      `the option names of ${where} could not be read (its proxy threw)`,
    );
  }
  for (let i = 0; i < keys.length; i++) {
    if (!known.names.has(keys[i] as string)) {
      throw unknownOption(where, keys[i] as string, known, options);
    }
  }
}

const TTL_NAMES = new Set(["ttl", "ttlms"]);
const LEASE_NAMES = new Set(["lease", "leasems", "waitms"]);

function unknownOption(
  where: string,
  key: string,
  known: KnownOptions,
  options: object,
): InvalidConfiguration {
  const owner = where.replace(/\(\)/g, "");
  const shown = optionName(key);
  const lower = key.toLowerCase();
  if (known.role === "lock" && TTL_NAMES.has(lower)) {
    const example = withTtl(backendClass(options)) ?? withTtl("RedisLock");
    return new InvalidConfiguration(
      `${shown} is an option of the backend, not of ${owner}: ${example}`,
    );
  }
  if (known.role === "backend" && LEASE_NAMES.has(lower)) {
    return new InvalidConfiguration(
      `${shown} is an option of lock() and the surfaces, not of ${owner}: lock(key, { backend, leaseMs }, body)`,
    );
  }
  const names = [...known.names];
  const near = closest(key, names);
  return new InvalidConfiguration(
    near === undefined
      ? `${shown} is not an option of ${owner}; known options: ${names.join(", ")}`
      : `${shown} is not an option of ${owner}; did you mean ${optionName(near)}?`,
  );
}

/** A key as a message shows it: in backticks when plain, else quoted and cut short. */
function optionName(key: string): string {
  return /^[\w$]{1,64}$/.test(key) ? `\`${key}\`` : describe(key);
}

/** The class name of `options.backend`, read without running user code; "" when unknown. */
function backendClass(options: object): string {
  try {
    const backend = Object.getOwnPropertyDescriptor(options, "backend")?.value as unknown;
    if (backend === null || typeof backend !== "object") return "";
    const made = Object.getPrototypeOf(backend)?.constructor as unknown;
    const name =
      typeof made === "function" ? Object.getOwnPropertyDescriptor(made, "name")?.value : "";
    return typeof name === "string" ? name : "";
  } catch {
    return "";
  }
}

/**
 * The known name a misspelt `key` most likely meant: one equal but for case, else the
 * nearest within a few edits (about a third of the longer name), else one that contains
 * it or that it contains (`timeout` → `requestTimeoutMs`). Undefined when none is close.
 */
export function closest(key: string, names: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of names) {
    const candidate = name.toLowerCase();
    if (candidate === lower) return name;
    const distance = editDistance(lower, candidate);
    const allowed = Math.max(2, Math.floor(Math.max(lower.length, candidate.length) / 3));
    if (distance <= allowed && distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  if (best !== undefined || lower.length < 3) return best;
  return names.find((name) => {
    const candidate = name.toLowerCase();
    return candidate.includes(lower) || (candidate.length >= 3 && lower.includes(candidate));
  });
}

/** Optimal string alignment distance (Levenshtein plus adjacent swaps), capped at 64 chars. */
function editDistance(a: string, b: string): number {
  if (a.length > 64 || b.length > 64) return Number.POSITIVE_INFINITY;
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row: number[] = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      const above = rows[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      }
      row.push(d);
    }
    rows.push(row);
  }
  return (rows[a.length] as number[])[b.length] as number;
}

/**
 * Read the named options of `value` once each into a plain object, so every later check
 * and use sees one value (a getter that answers differently each time cannot slip a bad
 * value past its check). `value` must be an object (or absent when `optional`); `where`
 * names the owner in each refusal. A getter or Proxy trap that throws becomes an
 * {@link InvalidConfiguration} naming the option.
 *
 * Every key of `value` must be in `known` (default: `names`), else the call is refused by
 * {@link assertKnownOptions}; pass `false` when another reader of the same object (the
 * surface reading its verb's options) checks them all against the owner's full set.
 */
export function readOptions<K extends string>(
  where: string,
  value: unknown,
  optional: boolean,
  names: readonly K[],
  known: KnownOptions | false = knownOptions(names),
): { readonly [P in K]?: unknown } {
  const options = optionsObject(where, value, optional) as Record<string, unknown>;
  if (known !== false) assertKnownOptions(where, options, known);
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
