// How a contract case that does not apply to a backend is reported: skipped by the runner
// (vitest's `context.skip`, node:test's `t.skip`), never passed. A case declares the optional
// methods it needs; the suite checks them on the backend it creates for the case.
import type { LockBackend } from "../core/port.js";

/** The optional {@link LockBackend} methods a contract case can need. */
export type OptionalMethod = "renew" | "purgeExpired" | "inspect" | "forceRelease";

/** A backend that has the optional methods `M`. */
export type BackendWith<M extends OptionalMethod> = LockBackend & Required<Pick<LockBackend, M>>;

/**
 * Thrown inside a case that does not apply to the backend (or the target) under test: the
 * suite catches it and has the runner report the case skipped, with `message` as the reason.
 */
export class CaseDoesNotApply extends Error {
  override readonly name = "CaseDoesNotApply";
}

/** Throws {@link CaseDoesNotApply} naming each of `needs` that `backend` lacks. */
export function assertHasMethods<M extends OptionalMethod>(
  backend: LockBackend,
  needs: readonly M[],
): asserts backend is BackendWith<M> {
  const missing = needs.filter((name) => typeof backend[name] !== "function");
  if (missing.length > 0) {
    const names = missing.map((name) => `${name}()`).join(" or ");
    throw new CaseDoesNotApply(`the backend has no ${names}: this case needs it`);
  }
}

/**
 * Report the running case skipped: through the runner's own `skip` when it has one, else
 * through the test context the runner handed the case, when that context can skip (vitest's
 * and node:test's both can). A runner with neither (jest has no skip from inside a case)
 * fails the case instead, saying why: a case that did not run is never reported as passed.
 */
export function skipRunningCase(
  runnerSkip: ((context: unknown, reason: string) => void) | undefined,
  context: unknown,
  reason: string,
): void {
  if (runnerSkip) {
    runnerSkip(context, reason);
    return;
  }
  const skip = (context as { skip?: unknown } | null | undefined)?.skip;
  if (typeof skip === "function") {
    skip.call(context, reason);
    return;
  }
  throw new Error(
    `not run: ${reason}. This runner cannot mark a running case skipped (give the TestRunner ` +
      "a skip(context, reason)), so the case fails rather than pass without running",
  );
}
