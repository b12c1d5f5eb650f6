// What lock(), mutex(), once() and lockInTransaction() share: check the call where it enters,
// run one cycle (traced when telemetry records), and answer with the body's value or a
// rejection. A de-duplicating verb's body runs in a step scope (scope.ts) when steps are
// recorded; a mutex's never does.
import { type CycleBody, type CycleMode, type RecordedResult, runCycle } from "../engine/cycle.js";
import { type CycleOutcome, resultOf } from "../engine/outcome.js";
import { Duplicate, InvalidConfiguration } from "../errors.js";
import {
  LOCK_OPTION_NAMES,
  lockOptionsOf,
  type ResolvedLockOptions,
  requireSupport,
  transactionalBackend,
} from "../options.js";
import { fingerprintOption } from "../record-fields.js";
import { traceCycle } from "../telemetry/trace.js";
import {
  assertFunction,
  assertPositiveMs,
  assertValidKey,
  booleanOption,
  knownOptions,
  readOptions,
} from "../validate.js";
import {
  codecOption,
  DEFAULT_MAX_RESULT_BYTES,
  type ResultCodec,
  recordResult,
  replayResult,
} from "./result.js";
import { scopedBody, stepsRecorded } from "./scope.js";

/** How a verb's body is called: where its signal parameter is, and its shape for the engine. */
export interface VerbBody<B, T> {
  /** The signal's index among the body's parameters. */
  readonly signalAt: number;
  /** The body in the engine's shape (claim, signal, tx). */
  readonly adapt: (body: B) => CycleBody<T>;
}

/** The options every verb takes beyond the lock options, and once()'s own. */
const VERB_NAMES = [...LOCK_OPTION_NAMES, "fingerprint", "steps"] as const;
const ONCE_NAMES = [...VERB_NAMES, "codec", "maxResultBytes"] as const;
const VERB_KNOWN = knownOptions(VERB_NAMES, "lock");
const ONCE_KNOWN = knownOptions(ONCE_NAMES, "lock");

/** How once() records a result and reads it back. */
interface Recording<T> {
  readonly codec: ResultCodec<T>;
  readonly record: (value: T) => RecordedResult;
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
  const once = mode === "once";
  // Every option read once: this runs on every call.
  const extra: { readonly [P in (typeof ONCE_NAMES)[number]]?: unknown } = once
    ? readOptions(where, options, false, ONCE_NAMES, ONCE_KNOWN)
    : readOptions(where, options, false, VERB_NAMES, VERB_KNOWN);
  const resolved = lockOptionsOf(where, extra);
  const fingerprint = fingerprintOption("options.fingerprint", extra.fingerprint);
  if (fingerprint !== undefined) requireSupport(where, resolved.backend, "fingerprints");
  if (mode === "transaction") transactionalBackend(where, resolved.backend);
  const steps = stepsOption(where, mode, extra.steps);
  const recording = once ? recordingOf<T>(where, resolved, extra) : undefined;
  assertFunction(where, "body", body);
  const adapted = shape.adapt(body);
  const outcome = await traceCycle(
    {
      mode,
      key,
      options: resolved,
      body: steps ? scopedBody(adapted, key, resolved, undefined) : adapted,
      bodyTakesSignal: body.length > shape.signalAt,
      message: undefined,
      signal: undefined,
      fingerprint,
      record: recording?.record,
    },
    runCycle,
  );
  return recording === undefined ? resultOf(outcome) : replayed(outcome, recording.codec);
}

/** Whether the body records steps: `steps: true`, or a body around it that does; never a mutex. */
function stepsOption(where: string, mode: CycleMode, asked: unknown): boolean {
  const steps = booleanOption("options.steps", asked);
  if (mode !== "mutex") return stepsRecorded(steps);
  if (steps === true) {
    throw new InvalidConfiguration(
      `${where} options.steps cannot be true: a mutex key is shared by distinct messages, so one message's recorded step would be replayed to the next; record steps in the lock(), once() or surface handler around the mutex`,
    );
  }
  return false;
}

/** once()'s codec and size limit, checked: the smaller of `maxResultBytes` and the store's. */
function recordingOf<T>(
  where: string,
  resolved: ResolvedLockOptions,
  extra: { readonly codec?: unknown; readonly maxResultBytes?: unknown },
): Recording<T> {
  const supports = requireSupport(where, resolved.backend, "results");
  const codec = codecOption<T>(extra.codec);
  const asked = extra.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
  assertPositiveMs("options.maxResultBytes", asked);
  const maxBytes = Math.min(asked as number, supports.maxResultBytes);
  return { codec, record: (value) => recordResult(value, codec, maxBytes) };
}

/** once()'s answer: its own run's value, the recorded one of an earlier run, or a rejection. */
export function replayed<T>(outcome: CycleOutcome<T>, codec: ResultCodec<T>): T {
  if (outcome.kind !== "duplicate") return resultOf(outcome);
  const replay = replayResult(outcome.key, outcome.result, codec);
  if (replay.replayed) return replay.value;
  throw new Duplicate(outcome.key, replay.why);
}
