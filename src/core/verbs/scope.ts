// What step() finds around it: the nearest de-duplicating key (a lock, once or
// lockInTransaction body, or a surface's handler) and its options, carried through every
// await by AsyncLocalStorage. A mutex sets no scope: its key is shared by distinct messages,
// so a step inside it keys on whatever de-duplicating key is around the mutex.
// A scope is entered only where steps were asked for (`steps: true`) or one is already
// around: AsyncLocalStorage.run costs about 0.6 µs a call on Node 24, and its first use turns
// on promise hooks for the whole process on Node 20 and 22 (docs/benchmarks/step-scope-*.md).
import { AsyncLocalStorage } from "node:async_hooks";
import type { CycleBody } from "../engine/cycle.js";
import type { MessageRef } from "../logger.js";
import type { ResolvedLockOptions } from "../options.js";

/** One run of a de-duplicating body, as its steps see it. */
export interface StepScope {
  /**
   * The key the steps derive theirs from; undefined where a surface runs its handler without a
   * claim (the gateway disabled, or an unkeyed message allowed unguarded): steps run unrecorded.
   */
  readonly key: string | undefined;
  /** The enclosing backend, lease, heartbeat, logger and telemetry. */
  readonly options: ResolvedLockOptions | undefined;
  /**
   * The step names this run used so far (made by its first step): a name used twice in one
   * run is refused. A body that calls no step allocates none.
   */
  names: Set<string> | undefined;
  /** The delivery a surface runs the body for: the steps' log lines name it too. */
  readonly message: MessageRef | undefined;
}

const scopes = new AsyncLocalStorage<StepScope>();

/** The scope of the body running now, if any. */
export function currentScope(): StepScope | undefined {
  return scopes.getStore();
}

/**
 * Whether a body recording steps starts here: asked for with `steps: true`, or inherited
 * from a body around it that records steps (a lookup, no allocation, when none is).
 */
export function stepsRecorded(asked: boolean | undefined): boolean {
  return asked === true || scopes.getStore() !== undefined;
}

/** `body` run inside a new step scope for `key`: each run gets its own set of names. */
export function scopedBody<T>(
  body: CycleBody<T>,
  key: string,
  options: ResolvedLockOptions,
  message: MessageRef | undefined,
): CycleBody<T> {
  return (claim, signal, tx) =>
    scopes.run({ key, options, names: undefined, message }, body, claim, signal, tx);
}

/**
 * `run` inside a scope whose steps run their bodies directly, unrecorded: a surface's handler
 * run without a claim still finds step() usable, as the rest of it runs unguarded.
 */
export function unguardedScope<T>(run: () => T, message: MessageRef | undefined): T {
  return scopes.run({ key: undefined, options: undefined, names: undefined, message }, run);
}
