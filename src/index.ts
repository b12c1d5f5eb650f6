/**
 * The core: `lock`, `mutex`, `once`, `step` and `lockInTransaction`, the Pub/Sub surfaces, `InMemoryLock`, the errors and the backend port. No runtime dependencies.
 *
 * @module gcp-pubsub-idempotency
 */
export { InMemoryLock, type InMemoryLockOptions } from "./backends/memory/index.js";
export {
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_HOLD_MS,
  DEFAULT_TTL_MS,
  MAX_KEY_BYTES,
  MAX_LEASE_MS,
  MAX_TTL_MS,
} from "./core/constants.js";
export {
  BackendError,
  Duplicate,
  IdempotencyError,
  type IdempotencyErrorCode,
  InProgress,
  InvalidConfiguration,
  InvalidKey,
  MalformedMessage,
  PayloadMismatch,
  ThrownValue,
  UnkeyedMessage,
} from "./core/errors.js";
export { jsonLogger } from "./core/logger.js";
export type {
  BackendSupport,
  Claim,
  ClaimOptions,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  LockBackend,
  PurgeOptions,
  TransactionalLockBackend,
  TransactionCompletion,
  TransactionOf,
} from "./core/port.js";
export type {
  FingerprintOption,
  GuardedBody,
  HeartbeatOptions,
  LockOptions,
  LogFields,
  Logger,
  StepsOption,
  TelemetryMeterProvider,
  TelemetryOptions,
  TelemetryTracerProvider,
} from "./core/types.js";
export { assertValidKey } from "./core/validate.js";
export { lock, mutex } from "./core/verbs/lock.js";
export { type OnceOptions, once } from "./core/verbs/once.js";
export { DEFAULT_MAX_RESULT_BYTES, type ResultCodec } from "./core/verbs/result.js";
export { type StepOptions, step, stepKey } from "./core/verbs/step.js";
export {
  lockInTransaction,
  type TransactionalBody,
  type TransactionalLockOptions,
} from "./core/verbs/transaction.js";
export * from "./surfaces/index.js";
export type { PushAuthOptions, PushVerifierContext } from "./surfaces/push-auth/options.js";
export type {
  PushAuthAccepted,
  PushAuthRefused,
  PushAuthResult,
} from "./surfaces/push-auth/verdict.js";
export { createPushVerifier, type PushVerifier } from "./surfaces/push-auth/verifier.js";
