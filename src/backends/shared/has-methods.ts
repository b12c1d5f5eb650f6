// How a backend constructor tells what a client is, before any I/O: by the methods it has,
// never by calling them.

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
