// The engine checks a delivery's key and lease once, where they enter; a built-in backend's
// public methods check them again, for a direct caller. The trusted port is the backend's
// own code without that second check, offered by its constructor for the engine alone.
import type { LockBackend } from "./port.js";

// A registry key, not a module-private symbol: the ESM and CommonJS builds each carry a copy
// of this module, and a backend made by one must be found by the engine of the other.
const TRUSTED_PORT = Symbol.for("gcp-pubsub-idempotency.trusted-port");

/** The port methods a trusted port stands in for; the operator calls keep their checks. */
const PORT_METHODS = ["claim", "complete", "release", "renew", "completeInTransaction"] as const;

/** What a backend's constructor left on it: the port, and what it stands in for. */
interface Offer {
  /** The backend the port belongs to: a Proxy or an object made from it is another backend. */
  readonly owner: object;
  readonly port: LockBackend;
  /** Each port method of the owner as it was offered (undefined where it has none). */
  readonly methods: readonly (readonly [string, unknown])[];
}

/**
 * Offer `port` as the trusted port of `backend`: the same port methods (claim, complete,
 * release, and renew / completeInTransaction when `backend` has them), running the same code
 * without the key and lease checks. Called by a built-in backend's constructor, for an
 * instance of that very class (a subclass may override a method the port would bypass).
 * Non-enumerable, under a symbol: no declaration, listing or copy of the backend shows it.
 */
export function offerTrustedPort(backend: object, port: LockBackend): void {
  const methods = PORT_METHODS.map((name) => [name, Reflect.get(backend, name)] as const);
  const offer: Offer = { owner: backend, port: Object.freeze(port), methods };
  Object.defineProperty(backend, TRUSTED_PORT, { value: Object.freeze(offer) });
}

/**
 * The port the engine calls `backend` through: the trusted port a built-in backend offered,
 * as long as `backend` is that very object and none of its port methods was replaced since;
 * otherwise `backend` itself (a custom backend, a Proxy, a subclass, a patched instance).
 * Never throws: a backend whose getters throw is its own port.
 */
export function trustedPort(backend: LockBackend): LockBackend {
  try {
    const offer: unknown = Reflect.get(backend, TRUSTED_PORT);
    if (!isOffer(offer) || offer.owner !== backend) return backend;
    for (const [name, method] of offer.methods) {
      if (Reflect.get(backend, name) !== method) return backend;
    }
    return offer.port;
  } catch {
    return backend;
  }
}

function isOffer(value: unknown): value is Offer {
  if (value === null || typeof value !== "object") return false;
  const { owner, port, methods } = value as Partial<Offer>;
  return (
    typeof owner === "object" &&
    owner !== null &&
    typeof port === "object" &&
    port !== null &&
    Array.isArray(methods)
  );
}
