// The off switch for tests and emergencies: with GCP_PUBSUB_IDEMPOTENCY_DISABLED set, the
// surfaces run handlers unguarded and never touch the store.
import type { Logger } from "../core/types.js";

export const DISABLED_ENV = "GCP_PUBSUB_IDEMPOTENCY_DISABLED";
let warnedDisabled = false;

/**
 * True when `GCP_PUBSUB_IDEMPOTENCY_DISABLED` is `1`, `true`, `yes` or `on`: the surfaces
 * then run handlers unguarded (one warning) and never touch the store. Read at call time,
 * so a test or an operator can flip it without a restart. Never set it in production.
 *
 * @example
 * ```ts
 * import { gatewayDisabled } from "gcp-pubsub-idempotency";
 *
 * process.env.GCP_PUBSUB_IDEMPOTENCY_DISABLED = "1";
 * console.log(gatewayDisabled()); // true
 * ```
 */
export function gatewayDisabled(): boolean {
  const value = process.env[DISABLED_ENV]?.trim().toLowerCase();
  return value === "1" || value === "true" || value === "yes" || value === "on";
}

export function warnDisabledOnce(logger: Logger): void {
  if (warnedDisabled) return;
  warnedDisabled = true;
  logger.warn(`${DISABLED_ENV} is set: the idempotency gateway is a pass-through`, {
    outcome: "disabled",
  });
}

/** Test hook: forget that the disabled warning was written. */
export function resetDisabledWarning(): void {
  warnedDisabled = false;
}
