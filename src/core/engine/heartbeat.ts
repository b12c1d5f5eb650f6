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
 * Renew `claim` every `everyMs` until stopped or `maxHoldMs` has passed. A renewal that
 * answers false means another holder reclaimed the key: the body's signal is aborted.
 * Returns the function that stops it.
 */
export function startHeartbeat(
  plan: HeartbeatPlan,
  backend: LockBackend,
  claim: Claim,
  leaseMs: number,
  controller: AbortController,
  logger: Logger,
  about?: MessageRef,
): () => void {
  const renew = backend.renew?.bind(backend);
  if (!renew) return () => {};
  const startedAt = Date.now();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

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
    try {
      const alive = await renew(claim, leaseMs);
      if (stopped) return;
      if (!alive) {
        logger.error(
          "lease lost: another holder reclaimed the key while the body ran",
          deliveryFields("fenced_out", claim.key, about, undefined, {
            fencingId: claim.fencingId,
          }),
        );
        controller.abort(new Error(`lease on ${claim.key} was taken over`));
        return;
      }
    } catch (error) {
      // A failed renewal is not a lost lease: the next tick may still succeed in time.
      logger.warn(
        "heartbeat renewal failed; will retry",
        deliveryFields("renew_failed", claim.key, about, errorText(error), {
          fencingId: claim.fencingId,
        }),
      );
    }
    schedule();
  };
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => void tick(), plan.everyMs);
    timer.unref?.();
  };
  schedule();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
