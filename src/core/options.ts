import { DEFAULT_LEASE_MS } from "./constants.js";
import { InvalidConfiguration } from "./errors.js";
import { type HeartbeatPlan, planHeartbeat } from "./heartbeat.js";
import { guardLogger, jsonLogger } from "./logger.js";
import type { LockBackend, Logger } from "./types.js";
import {
  assertNonNegativeMs,
  assertPositiveMs,
  describe,
  readOptions,
  readProperty,
} from "./validate.js";

/** {@link LockOptions} after one validation pass: every field checked, defaults applied. */
export interface ResolvedLockOptions {
  readonly backend: LockBackend;
  readonly leaseMs: number;
  readonly waitMs: number;
  /** The caller's logger behind a guard: it can neither throw nor reject into our code. */
  readonly logger: Logger;
  readonly heartbeat: HeartbeatPlan | undefined;
}

const LOCK_OPTION_NAMES = ["backend", "leaseMs", "waitMs", "logger", "heartbeat"] as const;

/**
 * Check every option of a verb or surface once, where it enters: `where` names the caller
 * in each refusal (`lock()`, `idempotentHttp()`). Anything odd about the object itself (a
 * Proxy whose getters throw) is a configuration error too, never a stray TypeError.
 */
export function resolveLockOptions(where: string, options: unknown): ResolvedLockOptions {
  const o = readOptions(where, options, false, LOCK_OPTION_NAMES);
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
}

const REQUIRED_METHODS = ["claim", "complete", "release"] as const;
const OPTIONAL_METHODS = ["renew", "purgeExpired", "close", "inspect", "forceRelease"] as const;

function backendOption(where: string, value: unknown): LockBackend {
  const what = `${where} options.backend`;
  const method = (name: string) => readProperty(`${what}.${name}`, value as object, name);
  if (
    value === null ||
    typeof value !== "object" ||
    !REQUIRED_METHODS.every((name) => typeof method(name) === "function")
  ) {
    throw new InvalidConfiguration(
      `${what} must implement claim, complete and release, got ${describe(value)}`,
    );
  }
  for (const name of OPTIONAL_METHODS) {
    const found = method(name);
    if (found !== undefined && typeof found !== "function") {
      throw new InvalidConfiguration(
        `${what}.${name} must be a function when present, got ${describe(found)}`,
      );
    }
  }
  return value as LockBackend;
}

function loggerOption(value: unknown): Logger {
  if (value === undefined) return jsonLogger;
  if (
    value === null ||
    typeof value !== "object" ||
    !["info", "warn", "error"].every(
      (level) => typeof readProperty(`logger.${level}`, value, level) === "function",
    )
  ) {
    throw new InvalidConfiguration(
      `logger must be an object with info, warn and error functions, got ${describe(value)}`,
    );
  }
  return value as Logger;
}
