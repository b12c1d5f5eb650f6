// Optional peers (a backend's driver, google-auth-library) are imported on demand, each by a
// literal `import()` at its call site so that a bundler sees the name. Whether one is missing
// is decided from that import's own failure, never from a path lookup (which a bundled
// application would fail): the loader's "cannot find" for that very package. A module missing
// inside the package (a broken install) is another failure, and is reported as it is.
import { IdempotencyError, InvalidConfiguration } from "./errors.js";
import { errorText } from "./logger.js";
import type { Logger } from "./types.js";

/** The package a specifier names: `@scope/name` or `name`, without a subpath. */
export function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return parts.slice(0, specifier.startsWith("@") ? 2 : 1).join("/");
}

/**
 * True when `error` is the module loader saying that `specifier`, or its package, cannot be
 * found: Node's ESM loader ("Cannot find package 'x' imported from …"), its CommonJS
 * `require` ("Cannot find module 'x'"), and bundlers' stand-ins (webpack's) all say so, with
 * code ERR_MODULE_NOT_FOUND or MODULE_NOT_FOUND. A module missing inside the package names
 * another module, so it is not taken for the package being absent.
 */
export function isMissingPackage(error: unknown, specifier: string): boolean {
  let code: unknown;
  let message: unknown;
  try {
    code = (error as { code?: unknown }).code;
    message = (error as { message?: unknown }).message;
  } catch {
    return false;
  }
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false;
  if (typeof message !== "string") return false;
  for (const name of new Set([specifier, packageOf(specifier)])) {
    for (const quote of ["'", '"']) {
      for (const kind of ["package", "module"]) {
        if (message.startsWith(`Cannot find ${kind} ${quote}${name}${quote}`)) return true;
      }
    }
  }
  return false;
}

/** The text of a peer that is not installed: who needs it, and the command that installs it. */
export function missingPeerText(who: string, specifier: string): string {
  const name = packageOf(specifier);
  return `${who} needs ${name}, which is not installed: npm install ${name}`;
}

/**
 * Import the optional peer `specifier` with `load`, a literal `import()` of it. Rejects with an
 * {@link InvalidConfiguration} whose message names `who`, the package and `npm install` when
 * the package is not there; with one that says `who` could not load it, and why, for any other
 * failure (a module missing inside it, a throw as it loads). The loader's error is the cause.
 */
export async function importPeer<M>(
  who: string,
  specifier: string,
  load: () => Promise<M>,
): Promise<M> {
  try {
    return await load();
  } catch (error) {
    if (isMissingPackage(error, specifier)) {
      throw new InvalidConfiguration(missingPeerText(who, specifier), { cause: error });
    }
    throw new InvalidConfiguration(
      `${who} could not load ${packageOf(specifier)}: ${errorText(error)}`,
      { cause: error },
    );
  }
}

// A backend that imports its driver itself starts that import when it is built and hangs the
// promise on itself under this key, so that a surface built over it reports a failure at once
// (the constructor has no logger). A registry key, not a module-private symbol: each entry of
// the CommonJS build carries its own copy of this module.
const PEER_LOADING = Symbol.for("gcp-pubsub-idempotency.peerLoading");

/** Hang on `backend` the loading of the peer it needs; its failure is never unhandled. */
export function announcePeerLoading(backend: object, loading: Promise<unknown>): void {
  loading.catch(() => {});
  Object.defineProperty(backend, PEER_LOADING, { value: loading, configurable: true });
}

/**
 * Log, as one ERROR line, the failure of the peer `backend` announced, once it is known: for a
 * surface as it is built, so that a missing driver shows before any message arrives.
 */
export function reportPeerLoading(where: string, backend: object, logger: Logger): void {
  let loading: unknown;
  try {
    loading = (backend as { [PEER_LOADING]?: unknown })[PEER_LOADING];
  } catch {
    return;
  }
  if (!(loading instanceof Promise)) return;
  loading.then(undefined, (error: unknown) => {
    const text = error instanceof IdempotencyError ? error.message : errorText(error);
    logger.error(`${where}: ${text}; until then every message fails and is redelivered`, {
      error: text,
    });
  });
}
