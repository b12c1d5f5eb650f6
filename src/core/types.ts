// The public types of the verbs' options, their bodies and the logger they write to. The
// backend port is in port.ts.
import type { Claim, LockBackend } from "./port.js";

/**
 * Structured fields attached to a log line; the default logger merges them into the JSON.
 *
 * Every line about a delivery, from any surface (`idempotent`, `idempotentHttp`,
 * `idempotentMessage`) and from the verbs they call (a failed release, a fenced-out
 * complete, a lost lease), carries the same fields, in this order, so one message can be
 * followed through the logs:
 *
 * - `key`: the idempotency key, once resolved;
 * - `messageId`: the Pub/Sub messageId (for a CloudEvent that is not a Pub/Sub message, its
 *   CloudEvent id);
 * - `subscription`: the subscription, when the delivery names it (a push envelope, an
 *   unwrapped push's `x-goog-pubsub-subscription-name`, a Pub/Sub CloudEvent; a pull
 *   `Message` does not);
 * - `deliveryAttempt`: present only with a dead-letter policy;
 * - `outcome`: `duplicate`, `held`, `failed`, `fenced_out`, `payload_mismatch`, `unkeyed`,
 *   `invalid_key`, `malformed`, `too_large`, `unguarded`, `release_failed`,
 *   `complete_failed`, `result_not_recorded`, `hook_failed`, `client_gone`, `settle_failed`,
 *   `ack_failed` (with `ackError`, the AckError's code), `renew_failed`, `heartbeat_stopped`,
 *   `lease_lapsed`;
 * - `reason`: why, when there is one (the error's text, the 400 or 503 answer);
 *
 * then the line's own extras (`fencingId`, `leaseExpiresAt`, `stack`, `alert`, …). A field
 * with no value for the message is left out of the object, never present as `undefined`:
 * `"messageId" in fields` is true exactly when the line names a message. A delivery that
 * ends done writes no line.
 *
 * @example
 * ```ts
 * import { jsonLogger, type LogFields } from "gcp-pubsub-idempotency";
 *
 * const fields: LogFields = { key: "orders:42", outcome: "duplicate" };
 * jsonLogger.info("duplicate delivery skipped", fields);
 * ```
 */
export type LogFields = Record<string, unknown>;

/**
 * The logger the verbs and the gateway write to. The default, {@link jsonLogger}, writes
 * Cloud Logging JSON lines; pass your own to route them elsewhere.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, type Logger } from "gcp-pubsub-idempotency";
 *
 * const logger: Logger = {
 *   info: (message, fields) => console.log(message, fields),
 *   warn: (message, fields) => console.warn(message, fields),
 *   error: (message, fields) => console.error(message, fields),
 * };
 * await lock("orders:42", { backend: new InMemoryLock(), logger }, async () => {});
 * ```
 */
export interface Logger {
  /** Routine events, e.g. a duplicate skipped. */
  info(message: string, fields?: LogFields): void;
  /** Expected trouble, e.g. contention on a key or a failed heartbeat renewal. */
  warn(message: string, fields?: LogFields): void;
  /** Needs attention, e.g. a fenced-out complete (`alert: true`) or a failed release. */
  error(message: string, fields?: LogFields): void;
}

/**
 * Opt-in lease renewal while the body runs (`heartbeat` in {@link LockOptions}). Needs a
 * backend with `renew`. The body's signal aborts when a renewal finds the key taken over, and
 * when the lease runs out with no renewal confirming it (the process was paused, or its store
 * did not answer): counted in the instance's clock from when the claim or renewal was sent.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, type HeartbeatOptions } from "gcp-pubsub-idempotency";
 *
 * const heartbeat: HeartbeatOptions = { everyMs: 10_000, maxHoldMs: 30 * 60_000 };
 * await lock("reports:daily", { backend: new InMemoryLock(), leaseMs: 30_000, heartbeat },
 *   async (_claim, signal) => {
 *     if (signal.aborted) throw signal.reason;
 *   });
 * ```
 */
export interface HeartbeatOptions {
  /** How often to renew, in ms; default a third of the lease. Must be shorter than the lease. */
  everyMs?: number | undefined;
  /**
   * Stop renewing after this long, in ms; default {@link DEFAULT_MAX_HOLD_MS} (60 minutes). The
   * signal then aborts when the last renewal's lease runs out.
   */
  maxHoldMs?: number | undefined;
}

/**
 * Options of {@link lock} and {@link mutex}. Only `backend` is required; bad values throw
 * {@link InvalidConfiguration} before any I/O.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, type LockOptions } from "gcp-pubsub-idempotency";
 *
 * const options: LockOptions = { backend: new InMemoryLock(), leaseMs: 60_000, waitMs: 500 };
 * await lock("orders:42", options, async () => {});
 * ```
 */
export interface LockOptions {
  /** The store that holds the records, e.g. `InMemoryLock`, `RedisLock`, `DatastoreLock`. */
  backend: LockBackend;
  /** Mutual-exclusion window while the work runs, in ms; default {@link DEFAULT_LEASE_MS}. */
  leaseMs?: number | undefined;
  /** Renew the lease while the body runs (needs `backend.renew`). Off by default. */
  heartbeat?: boolean | HeartbeatOptions | undefined;
  /** Default {@link jsonLogger}: one JSON line per event with a `severity` field (Cloud Logging). */
  logger?: Logger | undefined;
  /**
   * When the key is held, keep re-claiming with a short jittered backoff for up to this
   * many ms before answering InProgress. Default 0 (answer at once). Keep it well below the
   * push ack deadline or the function timeout.
   */
  waitMs?: number | undefined;
  /**
   * OpenTelemetry spans and metrics (needs `@opentelemetry/api`, an optional peer). On by
   * default with the global providers, and free until an SDK is registered; `false` turns it
   * off. See {@link TelemetryOptions}.
   */
  telemetry?: boolean | TelemetryOptions | undefined;
}

/**
 * The `fingerprint` option of the verbs ({@link lock}, {@link mutex}, {@link once},
 * {@link lockInTransaction}). The surfaces take their own form of it (`true` or a function).
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, type FingerprintOption, type LockOptions } from "gcp-pubsub-idempotency";
 *
 * const options: LockOptions & FingerprintOption = {
 *   backend: new InMemoryLock(),
 *   fingerprint: "po=4711;total=99",
 * };
 * await lock("orders:4711", options, async () => {});
 * ```
 */
export interface FingerprintOption {
  /**
   * What names this call's payload (a hash of the order, say). Stored with the claim and the
   * DONE record; a later call whose fingerprint differs rejects {@link PayloadMismatch} and
   * its body never runs. Absent: no comparison. Needs a backend that stores fingerprints.
   */
  fingerprint?: string | undefined;
}

/**
 * The `steps` option of {@link lock}, {@link once}, {@link lockInTransaction} and the
 * surfaces: `true` lets {@link step} record inside the body (or handler). Off by default, so
 * a body that calls no step pays nothing for the async context steps need; a verb inside a
 * body that records steps records its own steps too. Never on {@link mutex}: its key is shared
 * by distinct messages, so it cannot scope a step.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, step } from "gcp-pubsub-idempotency";
 *
 * declare function charge(po: string): Promise<string>;
 * declare function ship(po: string, chargeId: string): Promise<void>;
 * const backend = new InMemoryLock();
 * await lock("orders:4711", { backend, steps: true }, async () => {
 *   const chargeId = await step("charge", async () => charge("4711"));
 *   await step("ship", async () => ship("4711", chargeId));
 * });
 * ```
 */
export interface StepsOption {
  /**
   * `true`: {@link step} records inside this body. Absent or `false`: a step inside it
   * throws `InvalidConfiguration`, unless a body around it records steps.
   */
  steps?: boolean | undefined;
}

/**
 * A tracer provider as {@link TelemetryOptions} takes it: `@opentelemetry/api`'s
 * `TracerProvider` (an SDK's `BasicTracerProvider`, `NodeTracerProvider`) fits it.
 *
 * @example
 * ```ts
 * import { trace } from "@opentelemetry/api";
 * import type { TelemetryTracerProvider } from "gcp-pubsub-idempotency";
 *
 * const tracerProvider: TelemetryTracerProvider = trace.getTracerProvider();
 * ```
 */
export interface TelemetryTracerProvider {
  /** Returns the tracer of an instrumentation scope. */
  getTracer(name: string, version?: string): object;
}

/**
 * A meter provider as {@link TelemetryOptions} takes it: `@opentelemetry/api`'s
 * `MeterProvider` (the SDK's `MeterProvider`) fits it.
 *
 * @example
 * ```ts
 * import { metrics } from "@opentelemetry/api";
 * import type { TelemetryMeterProvider } from "gcp-pubsub-idempotency";
 *
 * const meterProvider: TelemetryMeterProvider = metrics.getMeterProvider();
 * ```
 */
export interface TelemetryMeterProvider {
  /** Returns the meter of an instrumentation scope. */
  getMeter(name: string, version?: string): object;
}

/**
 * The `telemetry` option of the verbs and surfaces. Spans: one per delivery (kind CONSUMER,
 * continuing the trace the message carries) and per verb, with children for claim, complete,
 * release and renew. Metrics: the counter `idempotency.outcomes` and the histograms
 * `idempotency.claim.duration` and `idempotency.body.duration` (seconds). Log lines written
 * while a span records carry Cloud Logging's trace fields.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, type TelemetryOptions } from "gcp-pubsub-idempotency";
 *
 * const telemetry: TelemetryOptions = { recordKey: false, projectId: "my-project" };
 * await lock("orders:42", { backend: new InMemoryLock(), telemetry }, async () => {});
 * ```
 */
export interface TelemetryOptions {
  /** Where spans go; default the global provider (`trace.setGlobalTracerProvider`). */
  tracerProvider?: TelemetryTracerProvider | undefined;
  /** Where metrics go; default the global provider (`metrics.setGlobalMeterProvider`). */
  meterProvider?: TelemetryMeterProvider | undefined;
  /** Put the idempotency key on spans (`idempotency.key`). Default false: keys can carry personal data. */
  recordKey?: boolean | undefined;
  /**
   * The project in `logging.googleapis.com/trace` (`projects/PROJECT/traces/ID`); default
   * GOOGLE_CLOUD_PROJECT, else GCLOUD_PROJECT.
   */
  projectId?: string | undefined;
}

/**
 * The body of a `lock` or `mutex`: it gets the claim and a signal that is aborted when a
 * heartbeat finds the key taken over.
 *
 * @example
 * ```ts
 * import { InMemoryLock, mutex, type GuardedBody } from "gcp-pubsub-idempotency";
 *
 * const body: GuardedBody<number> = async (claim, signal) => {
 *   signal.throwIfAborted();
 *   return claim.fencingId;
 * };
 * const fence = await mutex("po:4711", { backend: new InMemoryLock() }, body);
 * ```
 */
export type GuardedBody<T> = (claim: Claim, signal: AbortSignal) => T | Promise<T>;
