// What every store opener does: load the driver (saying which package to install when it is
// missing), connect failing fast, and pass on only the options given.
import { importPeer, isMissingPackage } from "../../core/peer.js";

/** A value option's text as the command line gave it, or undefined. */
export type OptionText = (name: string) => string | undefined;

/** The `ttlMs` to pass on, when the command has one. */
export type Ttl = { ttlMs?: number };

/** How long a command waits to reach its store. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** Connect, or fail with a message that names the store and why (the driver's own error). */
export async function reach<T>(
  what: string,
  connect: () => Promise<T>,
  why?: () => unknown,
): Promise<T> {
  try {
    return await connect();
  } catch (error) {
    const cause = why?.() ?? error;
    const reason = cause instanceof Error ? cause.message || cause.name : String(cause);
    throw new Error(`cannot reach ${what}: ${reason}`, { cause });
  }
}

/**
 * A driver, loaded by `load` (a literal `import()` of `specifier`, so a bundler sees the name).
 * When its package is not installed: undefined if `optional`, else an error naming the store,
 * the package and `npm install`; a package that is there but fails to load is that error.
 */
export async function loadDriver<M>(
  store: string,
  specifier: string,
  load: () => Promise<M>,
): Promise<M>;
export async function loadDriver<M>(
  store: string,
  specifier: string,
  load: () => Promise<M>,
  optional: true,
): Promise<M | undefined>;
export async function loadDriver<M>(
  store: string,
  specifier: string,
  load: () => Promise<M>,
  optional = false,
): Promise<M | undefined> {
  try {
    return await load();
  } catch (error) {
    if (optional && isMissingPackage(error, specifier)) return undefined;
    return importPeer(`the ${store} store`, specifier, () => Promise.reject(error));
  }
}

/** The entries whose value is defined (exactOptionalPropertyTypes: absent, not undefined). */
export function defined<T extends Record<string, string | undefined>>(
  entries: T,
): Partial<Record<keyof T, string>> {
  const out: Partial<Record<keyof T, string>> = {};
  for (const [name, value] of Object.entries(entries)) {
    if (value !== undefined) out[name as keyof T] = value;
  }
  return out;
}
