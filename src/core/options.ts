import { backendsWith } from "../backends/registry.js";
import { DEFAULT_LEASE_MS } from "./constants.js";
import { type HeartbeatPlan, planHeartbeat } from "./engine/heartbeat.js";
import { InvalidConfiguration } from "./errors.js";
import { guardLogger, jsonLogger } from "./logger.js";
import type { BackendSupport, LockBackend, TransactionalLockBackend } from "./port.js";
import { resolveTelemetry, type TelemetrySettings } from "./telemetry/settings.js";
import { trustedPort } from "./trusted-port.js";
import type { Logger } from "./types.js";
import {
  assertNonNegativeMs,
  assertPositiveMs,
  describe,
  type KnownOptions,
  knownOptions,
  readOptions,
} from "./validate.js";

/** {@link LockOptions} after one validation pass: every field checked, defaults applied. */
export interface ResolvedLockOptions {
  /** The backend as given: its name is what telemetry and messages show. */
  readonly backend: LockBackend;
  /** What the engine calls: the backend's port calls (telemetry may trace them). */
  readonly port: LockBackend;
  readonly leaseMs: number;
  readonly waitMs: number;
  /** The caller's logger behind a guard: it can neither throw nor reject into our code. */
  readonly logger: Logger;
  readonly heartbeat: HeartbeatPlan | undefined;
  /** The `telemetry` option checked; undefined when it is `false`. */
  readonly telemetry: TelemetrySettings | undefined;
}

/** The options of every verb and surface ({@link LockOptions}). */
export const LOCK_OPTION_NAMES = [
  "backend",
  "leaseMs",
  "waitMs",
  "logger",
  "heartbeat",
  "telemetry",
] as const;

const LOCK_OPTIONS = knownOptions(LOCK_OPTION_NAMES, "lock");

/**
 * Check every option of a verb or surface once, where it enters: `where` names the caller
 * in each refusal (`lock()`, `idempotentHttp()`). Anything odd about the object itself (a
 * Proxy whose getters throw) is a configuration error too, never a stray TypeError. An
 * option name outside `known` (a surface passes its own full set) is refused.
 */
export function resolveLockOptions(
  where: string,
  options: unknown,
  known: KnownOptions = LOCK_OPTIONS,
): ResolvedLockOptions {
  return lockOptionsOf(where, readOptions(where, options, false, LOCK_OPTION_NAMES, known));
}

/** The lock options resolved from their values, read once by the caller with its own. */
export function lockOptionsOf(
  where: string,
  o: { readonly [P in (typeof LOCK_OPTION_NAMES)[number]]?: unknown },
): ResolvedLockOptions {
  const backend = backendOption(where, o.backend);
  const leaseMs = o.leaseMs === undefined ? DEFAULT_LEASE_MS : o.leaseMs;
  assertPositiveMs("leaseMs", leaseMs);
  const waitMs = o.waitMs === undefined ? 0 : o.waitMs;
  assertNonNegativeMs("waitMs", waitMs);
  return {
    backend,
    port: trustedPort(backend),
    leaseMs,
    waitMs,
    logger: guardLogger(loggerOption(o.logger)),
    heartbeat: planHeartbeat(o.heartbeat, backend, leaseMs),
    telemetry: resolveTelemetry(where, o.telemetry),
  };
}

const REQUIRED_METHODS = ["claim", "complete", "release"] as const;
const OPTIONAL_METHODS = [
  "renew",
  "purgeExpired",
  "close",
  "completeInTransaction",
  "inspect",
  "forceRelease",
] as const;

function backendOption(where: string, value: unknown): LockBackend {
  if (value === null || typeof value !== "object") throw notABackend(where, value);
  // Plain loops, one try, text built only on a refusal: this runs on every lock() call.
  const backend = value as Record<string, unknown>;
  let name: string | undefined;
  let found: unknown;
  try {
    for (name of REQUIRED_METHODS) {
      if (typeof backend[name] !== "function") throw notABackend(where, value);
    }
    for (name of OPTIONAL_METHODS) {
      found = backend[name];
      if (found !== undefined && typeof found !== "function") {
        throw new InvalidConfiguration(
          `${where} options.backend.${name} must be a function when present, got ${describe(found)}`,
        );
      }
    }
  } catch (error) {
    if (error instanceof InvalidConfiguration) throw error;
    throw new InvalidConfiguration(
      `${where} options.backend.${name} could not be read (its getter or proxy threw)`,
    );
  }
  return value as LockBackend;
}

function notABackend(where: string, value: unknown): InvalidConfiguration {
  return new InvalidConfiguration(
    `${where} options.backend must implement claim, complete and release, got ${describe(value)}`,
  );
}

const LOGGER_LEVELS = ["info", "warn", "error"] as const;

function loggerOption(value: unknown): Logger {
  if (value === undefined) return jsonLogger;
  if (value === null || typeof value !== "object") throw notALogger(value);
  const logger = value as Record<string, unknown>;
  let level: string | undefined;
  try {
    for (level of LOGGER_LEVELS) if (typeof logger[level] !== "function") throw notALogger(value);
  } catch (error) {
    if (error instanceof InvalidConfiguration) throw error;
    throw new InvalidConfiguration(`logger.${level} could not be read (its getter or proxy threw)`);
  }
  return value as Logger;
}

function notALogger(value: unknown): InvalidConfiguration {
  return new InvalidConfiguration(
    `logger must be an object with info, warn and error functions, got ${describe(value)}`,
  );
}

/**
 * The backend of `lockInTransaction()` or of a surface with `transaction: true`: refused
 * before any I/O, naming it, unless it offers `completeInTransaction`.
 */
export function transactionalBackend<Tx>(
  where: string,
  backend: LockBackend,
): TransactionalLockBackend<Tx> {
  let method: unknown;
  try {
    method = (backend as Partial<TransactionalLockBackend<Tx>>).completeInTransaction;
  } catch {
    // Read once already by the backend check, which refuses a getter that throws.
  }
  if (typeof method === "function") return backend as unknown as TransactionalLockBackend<Tx>;
  throw new InvalidConfiguration(
    `${where} needs a backend with transactions (completeInTransaction: ${backendsWith("completeInTransaction").join(", ")}); ${backendName(backend)} has none`,
  );
}

/** The class name of a backend for a message ("RedisLock"), read without running its code. */
export function backendName(backend: object, fallback = "this backend"): string {
  try {
    const made = Object.getPrototypeOf(backend)?.constructor as unknown;
    const name =
      typeof made === "function" ? Object.getOwnPropertyDescriptor(made, "name")?.value : undefined;
    if (typeof name === "string" && name !== "" && name !== "Object") return name;
  } catch {
    // A Proxy whose traps throw: name it generically.
  }
  return fallback;
}

/** What a verb or surface asks of a backend beyond the port's three calls. */
export type StoredExtra = "results" | "fingerprints";

const EXTRA_USES: Readonly<Record<StoredExtra, string>> = {
  results: "once() and step() record results",
  fingerprints: "a fingerprint is stored with the claim",
};

/**
 * The backend's {@link BackendSupport}, or a refusal naming what `where` needs of it: when
 * the verb or surface is built, never on the first message.
 */
export function requireSupport(
  where: string,
  backend: LockBackend,
  extra: StoredExtra,
): BackendSupport {
  let supports: unknown;
  try {
    supports = (backend as { supports?: unknown }).supports;
  } catch {
    // A getter that throws reads as no support.
  }
  const offered =
    supports !== null && typeof supports === "object"
      ? (supports as Partial<Record<keyof BackendSupport, unknown>>)
      : undefined;
  if (offered?.[extra] === true) {
    const max = offered.maxResultBytes;
    if (extra === "fingerprints" || (typeof max === "number" && max > 0)) {
      return offered as BackendSupport;
    }
  }
  throw new InvalidConfiguration(
    `${where} needs a backend that stores ${extra} (${EXTRA_USES[extra]}); ${backendName(backend)} does not say it does (backend.supports.${extra}${extra === "results" ? " and a positive supports.maxResultBytes" : ""})`,
  );
}
