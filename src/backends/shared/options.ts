import { InvalidConfiguration } from "../../core/errors.js";
import { describe } from "../../core/validate.js";

// Option checks the backend constructors share (each option is read once, by readOptions in
// core/validate.ts, and checked here before any I/O).

/**
 * True when `value` is an object (or function) whose `methods` are all functions. Never
 * throws: a getter or Proxy trap that throws counts as a missing method.
 */
export function hasMethods(value: unknown, methods: readonly string[]): boolean {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return false;
  try {
    return methods.every((name) => typeof (value as Record<string, unknown>)[name] === "function");
  } catch {
    return false;
  }
}

/**
 * An optional client-like option: `undefined`, or an object with every one of `methods`.
 * `what` says what was expected, for the message.
 */
export function clientOption<T>(
  name: string,
  value: unknown,
  methods: readonly string[],
  what: string,
): T | undefined {
  if (value === undefined) return undefined;
  if (!hasMethods(value, methods)) {
    throw new InvalidConfiguration(
      `${name} must be ${what} (with ${methods.map((m) => `${m}()`).join(", ")}), got ${describe(value)}`,
    );
  }
  return value as T;
}

const encoder = new TextEncoder();

/** A lone surrogate (no exact UTF-8 form). No repeated group: a long name cannot overflow the stack. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * A store name (kind, collection): a well-formed string without U+0000 whose UTF-8 form is
 * 1 to `maxBytes` bytes, matching `pattern` too. Otherwise a configuration error naming the
 * option and saying what is `allowed`.
 */
export function nameOption(
  name: string,
  value: unknown,
  maxBytes: number,
  pattern: RegExp,
  allowed: string,
): string | undefined {
  if (value === undefined) return undefined;
  if (
    typeof value !== "string" ||
    value.length === 0 ||
    value.includes("\0") ||
    encoder.encode(value).length > maxBytes ||
    LONE_SURROGATE.test(value) ||
    !pattern.test(value)
  ) {
    throw new InvalidConfiguration(`${name} must be ${allowed}, got ${describe(value)}`);
  }
  return value;
}
