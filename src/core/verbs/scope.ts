// What step() finds around it: the nearest de-duplicating key (a lock, once or
// lockInTransaction body, or a surface's handler) and its options, carried through every
// await by AsyncLocalStorage. A mutex sets no scope: its key is shared by distinct messages,
// so a step inside it keys on whatever de-duplicating key is around the mutex.
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
  /** The step names this run used so far: a name used twice in one run is refused. */
  readonly names: Set<string>;
  /** The delivery a surface runs the body for: the steps' log lines name it too. */
  readonly message: MessageRef | undefined;
}

const scopes = new AsyncLocalStorage<StepScope>();

/**
 * Scoped runs not yet settled. When the last one settles the storage is disabled: on Node 20
 * and 22 an enabled AsyncLocalStorage keeps promise hooks on for every promise of the process,
 * which made every delivery, duplicates included, about twice as costly in CPU over an instant
 * backend. Disabled, a delivery made while no body runs pays nothing for step(); the next
 * body's run() enables it again. On Node 24 (AsyncContextFrame) neither costs anything.
 */
let running = 0;

/** The run's own state: the body settled closes it, so a late step() is refused alike. */
interface OpenScope extends StepScope {
  open: boolean;
}

/** The scope of the body running now, if any. */
export function currentScope(): StepScope | undefined {
  const scope = scopes.getStore() as OpenScope | undefined;
  // A step called after its body settled (not awaited by it) is outside any body, whether or
  // not another body keeps the storage enabled meanwhile.
  return scope?.open ? scope : undefined;
}

/** `run(...args)` in `scope` until it settles; the storage disabled when no run is left. */
async function within<A extends unknown[], T>(
  scope: OpenScope,
  run: (...args: A) => T | Promise<T>,
  ...args: A
): Promise<T> {
  running++;
  try {
    return await scopes.run(scope, run, ...args);
  } finally {
    scope.open = false;
    if (--running === 0) scopes.disable();
  }
}

/** `body` run inside a new step scope for `key`: each run gets its own set of names. */
export function scopedBody<T>(
  body: CycleBody<T>,
  key: string,
  options: ResolvedLockOptions,
  message: MessageRef | undefined,
): CycleBody<T> {
  return (claim, signal, tx) =>
    within({ key, options, names: new Set(), message, open: true }, body, claim, signal, tx);
}

/**
 * `run` inside a scope whose steps run their bodies directly, unrecorded: a surface's handler
 * run without a claim still finds step() usable, as the rest of it runs unguarded.
 */
export function unguardedScope<T>(
  run: () => T | Promise<T>,
  message: MessageRef | undefined,
): Promise<T> {
  return within({ key: undefined, options: undefined, names: new Set(), message, open: true }, run);
}
