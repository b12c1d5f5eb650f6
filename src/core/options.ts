import { DEFAULT_LEASE_MS } from "./constants.js";
import { IdempotencyError, InvalidConfiguration } from "./errors.js";
import { type HeartbeatPlan, planHeartbeat } from "./heartbeat.js";
import { errorText, guardLogger, jsonLogger } from "./logger.js";
import type { LockBackend, Logger } from "./types.js";
import { assertNonNegativeMs, assertPositiveMs, describe, optionsObject } from "./validate.js";

/** {@link LockOptions} after one validation pass: every field checked, defaults applied. */
export interface ResolvedLockOptions {
  readonly backend: LockBackend;
  readonly leaseMs: number;
  readonly waitMs: number;
  /** The caller's logger behind a guard: it can neither throw nor reject into our code. */
  readonly logger: Logger;
  readonly heartbeat: HeartbeatPlan | undefined;
}

/**
 * Check every option of a verb or surface once, where it enters: `where` names the caller
 * in each refusal (`lock()`, `idempotentHttp()`). Anything odd about the object itself (a
 * Proxy whose getters throw) is a configuration error too, never a stray TypeError.
 */
export function resolveLockOptions(where: string, options: unknown): ResolvedLockOptions {
  return readingOptions(where, () => {
    const o = optionsObject(where, options, false);
    const backend = backendOption(where, o.backend);
    const leaseMs = o.leaseMs === undefined ? DEFAULT_LEASE_MS : o.leaseMs;
    assertPositiveMs("leaseMs", leaseMs);
    const waitMs = o.waitMs === undefined ? 0 : o.waitMs;
    assertNonNegativeMs("waitMs", waitMs);
    return {
      backend,
      leaseMs,
      waitMs,
      logger: guardLogger(loggerOption(o.logger)),
      heartbeat: planHeartbeat(o.heartbeat, backend, leaseMs),
    };
  });
}

/** Run a validation; a throw that is not ours (a hostile getter) becomes a named refusal. */
export function readingOptions<T>(where: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof IdempotencyError) throw error;
    throw new InvalidConfiguration(`${where} options could not be read: ${errorText(error)}`);
  }
}

function backendOption(where: string, value: unknown): LockBackend {
  const b = value as Partial<Record<keyof LockBackend, unknown>> | null | undefined;
  if (
    b === null ||
    typeof b !== "object" ||
    typeof b.claim !== "function" ||
    typeof b.complete !== "function" ||
    typeof b.release !== "function"
  ) {
    throw new InvalidConfiguration(
      `${where} options.backend must implement claim, complete and release, got ${describe(value)}`,
    );
  }
  for (const name of ["renew", "purgeExpired", "close"] as const) {
    if (b[name] !== undefined && typeof b[name] !== "function") {
      throw new InvalidConfiguration(
        `${where} options.backend.${name} must be a function when present, got ${describe(b[name])}`,
      );
    }
  }
  return value as LockBackend;
}

function loggerOption(value: unknown): Logger {
  if (value === undefined) return jsonLogger;
  const l = value as Partial<Record<keyof Logger, unknown>> | null;
  if (
    l === null ||
    typeof l !== "object" ||
    typeof l.info !== "function" ||
    typeof l.warn !== "function" ||
    typeof l.error !== "function"
  ) {
    throw new InvalidConfiguration(
      `logger must be an object with info, warn and error functions, got ${describe(value)}`,
    );
  }
  return value as Logger;
}
