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
    throw storeError(backend, operation, key, error);
  }
}

/** The error {@link callStore} throws for `error`, for a caller that catches it itself. */
export function storeError(
  backend: string,
  operation: string,
  key: string | undefined,
  error: unknown,
): IdempotencyError {
  return error instanceof IdempotencyError
    ? error
    : new BackendError(backend, operation, key, error);
}

/**
 * {@link callStore} for a call that runs the caller's code inside it (a transaction body): an
 * error the body throws comes out exactly as thrown, since it is the caller's, not the
 * store's; every other failure is wrapped as callStore wraps it. `run` gets the body watched.
 */
export async function callStoreWithBody<A, R, T>(
  backend: string,
  operation: string,
  key: string | undefined,
  body: (arg: A) => Promise<R>,
  run: (body: (arg: A) => Promise<R>) => Promise<T>,
): Promise<T> {
  // The error of the body's last run; a store that runs the body again forgets an earlier one.
  let thrown: { error: unknown } | undefined;
  const watched = async (arg: A): Promise<R> => {
    thrown = undefined;
    try {
      return await body(arg);
    } catch (error) {
      thrown = { error };
      throw error;
    }
  };
  try {
    return await callStore(backend, operation, key, () => run(watched));
  } catch (error) {
    const own = thrown?.error;
    if (
      thrown !== undefined &&
      (error === own || (error instanceof BackendError && error.cause === own))
    ) {
      throw own;
    }
    throw error;
  }
}
