import { BackendError, IdempotencyError } from "../../core/errors.js";

/**
 * The one rule for failures inside a backend call: our own errors (an {@link IdempotencyError},
 * e.g. a BackendError from a nested call or an InvalidConfiguration) pass through as they are;
 * anything else, a driver's error, becomes a {@link BackendError} naming the backend, the
 * operation and the key (undefined for calls without one, e.g. `purgeExpired`).
 */
export async function callStore<T>(
  backend: string,
  operation: string,
  key: string | undefined,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof IdempotencyError) throw error;
    throw new BackendError(backend, operation, key, error);
  }
}
