// The heartbeat: its option turned into a plan (checked once, where the options enter), and the
// renewals that keep a claim's lease while its body runs.
import { DEFAULT_MAX_HOLD_MS } from "../constants.js";
import { isArraySafe } from "../describe.js";
import { InvalidConfiguration } from "../errors.js";
import { deliveryFields, errorText, type MessageRef } from "../logger.js";
import type { Claim, LockBackend } from "../port.js";
import type { Logger } from "../types.js";
import {
  assertPositiveMs,
  describe,
  knownOptions,
  readOptions,
  readProperty,
} from "../validate.js";

const HEARTBEAT_OPTION_NAMES = ["everyMs", "maxHoldMs"] as const;
const HEARTBEAT_OPTIONS = knownOptions(HEARTBEAT_OPTION_NAMES);

export interface HeartbeatPlan {
  everyMs: number;
  maxHoldMs: number;
}

/**
 * Resolve the heartbeat option into a plan, or report a configuration error at once:
 * `undefined`/`false` is off, `true` or an object is on; anything else ("false", 0, null)
 * is refused rather than read as truthy or falsy.
 */
export function planHeartbeat(
  heartbeat: unknown,
  backend: LockBackend,
  leaseMs: number,
): HeartbeatPlan | undefined {
  if (heartbeat === undefined || heartbeat === false) return undefined;
  if (
    heartbeat !== true &&
    (heartbeat === null || typeof heartbeat !== "object" || isArraySafe(heartbeat))
  ) {
    throw new InvalidConfiguration(
      `heartbeat must be true, false or { everyMs?, maxHoldMs? }, got ${describe(heartbeat)}`,
    );
  }
  if (typeof readProperty("options.backend.renew", backend, "renew") !== "function") {
    throw new InvalidConfiguration("heartbeat needs a backend with renew(); this backend has none");
  }
  const options = readOptions(
    "heartbeat",
    heartbeat === true ? {} : heartbeat,
    false,
    HEARTBEAT_OPTION_NAMES,
    HEARTBEAT_OPTIONS,
  );
  const everyMs =
    options.everyMs === undefined ? Math.max(1, Math.floor(leaseMs / 3)) : options.everyMs;
  const maxHoldMs = options.maxHoldMs === undefined ? DEFAULT_MAX_HOLD_MS : options.maxHoldMs;
  assertPositiveMs("heartbeat.everyMs", everyMs);
  assertPositiveMs("heartbeat.maxHoldMs", maxHoldMs);
  if (everyMs >= leaseMs) {
    throw new InvalidConfiguration(
      `heartbeat.everyMs (${everyMs}) must be shorter than the lease (${leaseMs} ms), or the lease lapses between renewals`,
    );
  }
  return { everyMs, maxHoldMs };
}

/**
 * Renew `claim` every `everyMs` until stopped or `maxHoldMs` has passed. The body's signal is
 * aborted when a renewal answers false (another holder reclaimed the key), and when the lease
 * lapses with no renewal vouching for it: a process that was paused, or cut off from its
 * store, past its lease learns it on its first timer, before any answer could tell it.
 * The lease is counted from when the claim or renewal left (`claimSentAt`), the earliest the
 * store can have started it. Returns the function that stops it.
 */
export function startHeartbeat(
  plan: HeartbeatPlan,
  backend: LockBackend,
  claim: Claim,
  leaseMs: number,
  controller: AbortController,
  logger: Logger,
  about: MessageRef | undefined,
  claimSentAt: number,
): () => void {
  const renew = backend.renew?.bind(backend);
  if (!renew) return () => {};
  const startedAt = Date.now();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let heldUntil = claimSentAt + leaseMs;
  let lapseTimer: NodeJS.Timeout | undefined;

  const lose = (message: string, outcome: string, reason: string): void => {
    if (controller.signal.aborted) return;
    logger.error(
      message,
      deliveryFields(outcome, claim.key, about, undefined, { fencingId: claim.fencingId }),
    );
    controller.abort(new Error(reason));
  };
  const watchLapse = (): void => {
    if (stopped) return;
    const left = heldUntil - Date.now();
    if (left > 0) {
      lapseTimer = setTimeout(watchLapse, left);
      lapseTimer.unref?.();
      return;
    }
    lose(
      "lease lapsed: no renewal confirmed it in time (a paused process or a cut-off store); another delivery may reclaim the key",
      "lease_lapsed",
      `lease on ${claim.key} lapsed: no renewal confirmed it within ${leaseMs} ms`,
    );
  };

  const tick = async (): Promise<void> => {
    if (stopped) return;
    if (Date.now() - startedAt >= plan.maxHoldMs) {
      logger.warn(
        "heartbeat stopped: the claim reached heartbeat.maxHoldMs",
        deliveryFields("heartbeat_stopped", claim.key, about, undefined, {
          fencingId: claim.fencingId,
          maxHoldMs: plan.maxHoldMs,
        }),
      );
      return;
    }
    const sentAt = Date.now();
    try {
      const alive = await renew(claim, leaseMs);
      if (stopped) return;
      if (!alive) {
        lose(
          "lease lost: another holder reclaimed the key while the body ran",
          "fenced_out",
          `lease on ${claim.key} was taken over`,
        );
        return;
      }
      heldUntil = Math.max(heldUntil, sentAt + leaseMs);
    } catch (error) {
      // A failed renewal is not a lost lease: the next tick may still succeed in time.
      logger.warn(
        "heartbeat renewal failed; will retry",
        deliveryFields("renew_failed", claim.key, about, errorText(error), {
          fencingId: claim.fencingId,
        }),
      );
    }
    // everyMs from when this renewal left, not from its answer: a store that answers slowly
    // must not push each renewal later than the last, past the lease the lapse watch counts.
    schedule(Math.max(0, sentAt + plan.everyMs - Date.now()));
  };
  const schedule = (delayMs: number): void => {
    if (stopped) return;
    timer = setTimeout(() => void tick(), delayMs);
    timer.unref?.();
  };
  schedule(plan.everyMs);
  watchLapse();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    if (lapseTimer) clearTimeout(lapseTimer);
  };
}
