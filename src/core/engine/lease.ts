// The signal a body runs with, and the heartbeat that keeps its lease: aborted when a renewal
// finds the key taken over, or when the caller's own signal (a push client that went away)
// aborts first.
import type { MessageRef } from "../logger.js";
import type { Claim, LockBackend } from "../port.js";
import type { Logger } from "../types.js";
import { type HeartbeatPlan, startHeartbeat } from "./heartbeat.js";

/** A won claim's signal, and what ends the watch on it once the body settled. */
export interface LeaseWatch {
  readonly signal: AbortSignal;
  end(): void;
}

/** What a lease watch needs to know of its cycle. */
export interface LeaseSettings {
  readonly port: LockBackend;
  readonly leaseMs: number;
  readonly heartbeat: HeartbeatPlan | undefined;
  readonly logger: Logger;
}

const nothingToEnd = (): void => {};

/**
 * One shared signal for bodies that cannot be aborted: they declare no signal parameter and
 * no heartbeat runs. A body that declares one gets its own, since a shared signal would keep
 * every listener a body ever added to it.
 */
const NEVER_ABORTED: LeaseWatch = { signal: new AbortController().signal, end: nothingToEnd };

/** What a lease watch needs to know of the body it watches. */
export interface WatchedBody {
  /** The body declares its signal parameter. */
  readonly bodyTakesSignal: boolean;
  /** Aborts the body's signal too (a push client that went away). */
  readonly signal: AbortSignal | undefined;
  readonly message: MessageRef | undefined;
}

/**
 * Watch `claim` while its body runs: with a heartbeat, renewals that abort the signal when the
 * key is taken over or the lease lapses unrenewed; the body's outer signal aborts it too.
 * `claimSentAt`: when the winning claim left, where the lease can have begun at the earliest.
 */
export function watchLease(
  settings: LeaseSettings,
  claim: Claim,
  body: WatchedBody,
  claimSentAt: number,
): LeaseWatch {
  const { heartbeat } = settings;
  const { bodyTakesSignal: takesSignal, signal: outer, message } = body;
  if (heartbeat === undefined) {
    if (outer !== undefined) return { signal: outer, end: nothingToEnd };
    return takesSignal
      ? { signal: new AbortController().signal, end: nothingToEnd }
      : NEVER_ABORTED;
  }
  const controller = new AbortController();
  const stop = startHeartbeat(
    heartbeat,
    settings.port,
    claim,
    settings.leaseMs,
    controller,
    settings.logger,
    message,
    claimSentAt,
  );
  if (outer === undefined) return { signal: controller.signal, end: stop };
  const either = eitherSignal(controller.signal, outer);
  return {
    signal: either.signal,
    end: () => {
      stop();
      either.dispose();
    },
  };
}

/** The signal of a handler run without a claim (gateway disabled, unguarded): no lease to lose. */
export function unclaimedSignal(takesSignal: boolean, outer: AbortSignal | undefined): AbortSignal {
  return outer ?? (takesSignal ? new AbortController().signal : NEVER_ABORTED.signal);
}

/**
 * One signal that aborts when either does, with the first one's reason; `dispose` drops the
 * listeners once the body settled. (`AbortSignal.any` needs Node.js 20.3.)
 */
export function eitherSignal(
  first: AbortSignal,
  second: AbortSignal,
): { signal: AbortSignal; dispose: () => void } {
  if (first.aborted) return { signal: first, dispose: nothingToEnd };
  if (second.aborted) return { signal: second, dispose: nothingToEnd };
  const controller = new AbortController();
  const onFirst = () => controller.abort(first.reason);
  const onSecond = () => controller.abort(second.reason);
  first.addEventListener("abort", onFirst, { once: true });
  second.addEventListener("abort", onSecond, { once: true });
  return {
    signal: controller.signal,
    dispose: () => {
      first.removeEventListener("abort", onFirst);
      second.removeEventListener("abort", onSecond);
    },
  };
}
