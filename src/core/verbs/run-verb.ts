// What lock(), mutex() and lockInTransaction() share: check the call where it enters, run one
// cycle (traced when telemetry records), and answer with the body's value or a rejection.
import { type CycleBody, type CycleMode, runCycle } from "../engine/cycle.js";
import { resultOf } from "../engine/outcome.js";
import { resolveLockOptions, transactionalBackend } from "../options.js";
import { traceCycle } from "../telemetry/trace.js";
import { assertFunction, assertValidKey } from "../validate.js";

/** How a verb's body is called: where its signal parameter is, and its shape for the engine. */
export interface VerbBody<B, T> {
  /** The signal's index among the body's parameters. */
  readonly signalAt: number;
  /** The body in the engine's shape (claim, signal, tx). */
  readonly adapt: (body: B) => CycleBody<T>;
}

/**
 * Run a verb: key, options and body checked before any I/O, in that order; then one cycle,
 * answered with the body's value or the verb's rejection.
 */
export async function runVerb<B extends (...args: never[]) => unknown, T>(
  mode: CycleMode,
  where: string,
  key: string,
  options: unknown,
  body: B,
  shape: VerbBody<B, T>,
): Promise<T> {
  assertValidKey(key);
  const resolved = resolveLockOptions(where, options);
  if (mode === "transaction") transactionalBackend(where, resolved.backend);
  assertFunction(where, "body", body);
  const outcome = await traceCycle(
    {
      mode,
      key,
      options: resolved,
      body: shape.adapt(body),
      bodyTakesSignal: body.length > shape.signalAt,
      message: undefined,
      signal: undefined,
    },
    runCycle,
  );
  return resultOf(outcome);
}
