// A leaf module: errors and validation both render hostile values with it.

/**
 * A short, total rendering of any value for an error message: never throws, never runs
 * user code (no toString, no getters), never prints more than about 40 characters of it.
 */
export function describe(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
    case "number":
    case "boolean":
    case "bigint":
      return `${typeof value} ${String(value)}`;
    case "undefined":
      return "undefined";
    case "symbol":
      return "a symbol";
    case "function":
      return "a function";
    default:
      return isArraySafe(value) ? "an array" : "an object";
  }
}

/** Array.isArray, except that a revoked Proxy (which makes it throw) counts as no array. */
export function isArraySafe(value: unknown): boolean {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}
