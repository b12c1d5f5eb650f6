// The rule for every server, emulator and store a test needs (DESIGN.md §7): in CI every
// backend must run, so one that cannot start fails the run; on a laptop without it, its tests
// are skipped and the run says why. Test files only: this module registers vitest tests.
import { it, type TestContext } from "vitest";
import { type Emulator, type EmulatorMode, startEmulator } from "./gcloud-emulator.js";

/** CI sets CI=true; "false" and "0" mean a local run. */
export const inCi = ((ci) => ci !== undefined && ci !== "" && ci !== "false" && ci !== "0")(
  process.env.CI,
);

/**
 * Start what tests need, or decide to skip them; undefined means skip.
 *
 * At a file's top level (no `test`): when `start` rejects, in CI a failing test named for
 * `what` is registered — not a throw, so the file's cleanup hooks for the servers it did
 * start still run — and elsewhere the reason is printed. Pair with `describe.skipIf`.
 *
 * Inside a test (its context as `test`): in CI the test fails; elsewhere it is skipped.
 */
export async function startOrSkip<T>(
  what: string,
  start: () => Promise<T>,
  test?: TestContext,
): Promise<T | undefined> {
  try {
    return await start();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const failure = new Error(`${what} cannot start, and CI requires it: ${reason}`, {
      cause: error,
    });
    if (inCi && test) throw failure;
    if (inCi) {
      it(`${what} starts (required in CI)`, () => {
        throw failure;
      });
      return undefined;
    }
    console.warn(`[skipped] ${what} cannot start: ${reason}`);
    test?.skip(`${what} cannot start`);
    return undefined;
  }
}

/** {@link startOrSkip} for a Google Cloud emulator; logs where it listens and its startup time. */
export async function emulatorOrSkip(
  mode: EmulatorMode,
  test?: TestContext,
): Promise<Emulator | undefined> {
  const emulator = await startOrSkip(`the ${mode} emulator`, () => startEmulator(mode), test);
  if (emulator) {
    console.info(
      `[support] ${mode} emulator at ${emulator.host}` +
        (emulator.owned ? `, started in ${emulator.startupMs} ms` : " (existing)"),
    );
  }
  return emulator;
}
