// OpenTelemetry, optional: `@opentelemetry/api` is a peer we never require at load time. It is
// imported once, lazily, the first time options with telemetry on are resolved; until it has
// loaded (or proved absent) the verbs await that one import. With telemetry off, the API absent
// or no SDK registered, a call costs one check and allocates nothing.
import type {
  Attributes,
  Context,
  Counter,
  Histogram,
  Meter,
  Span,
  SpanContext,
  Tracer,
} from "@opentelemetry/api";
import { isArraySafe } from "./describe.js";
import { InvalidConfiguration } from "./errors.js";
import { errorText } from "./logger.js";
import type { Claim, ClaimOutcome, LockBackend } from "./port.js";
import type {
  LogFields,
  Logger,
  TelemetryMeterProvider,
  TelemetryTracerProvider,
} from "./types.js";
import { booleanOption, describe, knownOptions, readOptions, readProperty } from "./validate.js";

type OtelApi = typeof import("@opentelemetry/api");

/** The instrumentation scope every span and instrument is created under. */
export const INSTRUMENTATION_NAME = "gcp-pubsub-idempotency";

/**
 * The key of the API's global registry (major version 1, as the peer range says): while it
 * is unset, nothing (no SDK, no context manager, no propagator) was ever registered.
 */
const OTEL_GLOBAL = Symbol.for("opentelemetry.js.api.1");

type TracerProviderLike = TelemetryTracerProvider;
type MeterProviderLike = TelemetryMeterProvider;

/** The `telemetry` option after validation; `undefined` stands for `telemetry: false`. */
export interface TelemetrySettings {
  readonly tracerProvider: TracerProviderLike | undefined;
  readonly meterProvider: MeterProviderLike | undefined;
  readonly recordKey: boolean;
  readonly projectId: string | undefined;
}

/** Telemetry on with the global providers: shared, so an omitted option allocates nothing. */
const DEFAULT_SETTINGS: TelemetrySettings = {
  tracerProvider: undefined,
  meterProvider: undefined,
  recordKey: false,
  projectId: undefined,
};

const TELEMETRY_OPTION_NAMES = [
  "tracerProvider",
  "meterProvider",
  "recordKey",
  "projectId",
] as const;
const TELEMETRY_OPTIONS = knownOptions(TELEMETRY_OPTION_NAMES);
const PROJECT_ID = /^[a-z][a-z0-9.:-]{0,99}$/;

/**
 * Check the `telemetry` option where it enters. `undefined` (the default) is on, with the
 * global providers; `false` is off; `true` is the default spelled out; an object sets providers,
 * `recordKey` and `projectId`. Anything else is refused, naming the field.
 */
export function resolveTelemetry(where: string, value: unknown): TelemetrySettings | undefined {
  if (value === false) return undefined;
  if (value === undefined || value === true) {
    if (api === undefined) void loadTelemetryApi();
    return DEFAULT_SETTINGS;
  }
  if (value === null || typeof value !== "object" || isArraySafe(value)) {
    throw new InvalidConfiguration(
      `${where} options.telemetry must be false, true or { tracerProvider?, meterProvider?, recordKey?, projectId? }, got ${describe(value)}`,
    );
  }
  const o = readOptions(
    `${where} options.telemetry`,
    value,
    false,
    TELEMETRY_OPTION_NAMES,
    TELEMETRY_OPTIONS,
  );
  const tracerProvider = providerOption(where, "tracerProvider", "getTracer", o.tracerProvider);
  const meterProvider = providerOption(where, "meterProvider", "getMeter", o.meterProvider);
  const recordKey = booleanOption(`${where} options.telemetry.recordKey`, o.recordKey) ?? false;
  const projectId = o.projectId;
  if (projectId !== undefined && (typeof projectId !== "string" || !PROJECT_ID.test(projectId))) {
    throw new InvalidConfiguration(
      `${where} options.telemetry.projectId must be a Google Cloud project id (lowercase letters, digits, hyphens), got ${describe(projectId)}`,
    );
  }
  if (api === undefined) void loadTelemetryApi();
  return {
    tracerProvider: tracerProvider as TracerProviderLike | undefined,
    meterProvider: meterProvider as MeterProviderLike | undefined,
    recordKey,
    projectId,
  };
}

function providerOption(where: string, name: string, method: string, value: unknown): unknown {
  if (value === undefined) return undefined;
  const field = `${where} options.telemetry.${name}`;
  if (
    value === null ||
    typeof value !== "object" ||
    typeof readProperty(`${field}.${method}`, value, method) !== "function"
  ) {
    throw new InvalidConfiguration(
      `${field} must be an OpenTelemetry provider with ${method}(), got ${describe(value)}`,
    );
  }
  return value;
}

// --- Loading the API ------------------------------------------------------------------------

/** undefined: not tried yet; null: not installed; else the API. */
let api: OtelApi | null | undefined;
let loading: Promise<void> | undefined;

/** Import the API once; resolves when it is known to be there or absent. Never rejects. */
export function loadTelemetryApi(): Promise<void> {
  loading ??= import("@opentelemetry/api").then(
    (loaded) => {
      // ESM import of the API's CommonJS build: its named exports, or `default` on old loaders.
      const m = loaded as OtelApi & { default?: OtelApi };
      api = typeof m.trace === "object" ? m : (m.default ?? null);
    },
    () => {
      api = null;
    },
  );
  return loading;
}

/** True once the import settled: the verbs await {@link loadTelemetryApi} only before that. */
export function telemetryApiSettled(): boolean {
  return api !== undefined;
}

// --- Instruments, once per provider -----------------------------------------------------------

interface Instruments {
  readonly outcomes: Counter;
  readonly claimDuration: Histogram;
  readonly bodyDuration: Histogram;
}

const tracers = new WeakMap<object, Tracer | null>();
const instruments = new WeakMap<object, Instruments | null>();

/** The tracer of a provider, or null when it is the API's no-op (spans would record nothing). */
function tracerOf(otel: OtelApi, settings: TelemetrySettings): Tracer | null {
  const provider = settings.tracerProvider ?? otel.trace.getTracerProvider();
  let tracer = tracers.get(provider);
  if (tracer === undefined) {
    const delegate = (provider as { getDelegate?: () => unknown }).getDelegate;
    // The global proxy without an SDK behind it hands out non-recording spans: skip them all.
    // A proxy is not cached, its delegate may be set later; a real provider is.
    if (typeof delegate === "function") {
      const real = delegate.call(provider) as object;
      if (real.constructor?.name === "NoopTracerProvider") return null;
      tracer = tracerOf(otel, { ...settings, tracerProvider: real as TracerProviderLike });
      return tracer;
    }
    tracer = provider.getTracer(INSTRUMENTATION_NAME) as Tracer;
    tracers.set(provider, tracer);
  }
  return tracer;
}

function instrumentsOf(otel: OtelApi, settings: TelemetrySettings): Instruments | null {
  const provider = settings.meterProvider ?? otel.metrics.getMeterProvider();
  let found = instruments.get(provider);
  if (found === undefined) {
    const meter = provider.getMeter(INSTRUMENTATION_NAME) as Meter;
    found =
      meter === otel.createNoopMeter()
        ? null
        : {
            outcomes: meter.createCounter("idempotency.outcomes", {
              description: "Guarded calls and deliveries by outcome, backend and verb",
              unit: "{call}",
            }),
            claimDuration: meter.createHistogram("idempotency.claim.duration", {
              description: "How long one claim round trip to the store took",
              unit: "s",
            }),
            bodyDuration: meter.createHistogram("idempotency.body.duration", {
              description: "How long the guarded body or handler ran",
              unit: "s",
            }),
          };
    instruments.set(provider, found);
  }
  return found;
}

// --- Observations -------------------------------------------------------------------------------

/** What an observed verb or delivery did; `held` is a key held elsewhere (InProgress). */
export type ObservedOutcome =
  | "ran"
  | "duplicate"
  | "held"
  | "failed"
  | "fenced_out"
  | "complete_failed"
  | "unkeyed"
  | "invalid_key"
  | "unguarded"
  | "disabled";

/** Span attribute names, the messaging ones from OpenTelemetry's semantic conventions. */
export const ATTR = {
  outcome: "idempotency.outcome",
  verb: "idempotency.verb",
  backend: "idempotency.backend",
  fencingId: "idempotency.fencing_id",
  key: "idempotency.key",
  waitedMs: "idempotency.waited_ms",
  surface: "idempotency.surface",
  system: "messaging.system",
  operation: "messaging.operation.type",
  messageId: "messaging.message.id",
  subscription: "messaging.destination.subscription.name",
  deliveryAttempt: "gcp_pubsub.message.delivery_attempt",
} as const;

/** Where a delivery came from, read only when telemetry records it. */
export interface DeliveryTrace {
  readonly surface: string;
  readonly messageId: string | undefined;
  readonly subscription: string | undefined;
  readonly deliveryAttempt: number | undefined;
  /** The remote parent, already validated (see trace-context.ts). */
  readonly parent: SpanContext | undefined;
}

const SPAN_KIND_INTERNAL = 0;
const SPAN_KIND_CLIENT = 2;
const SPAN_KIND_CONSUMER = 4;
const STATUS_ERROR = 2;

/**
 * One observed verb call or delivery: its span (when an SDK records spans), its outcome, and
 * the traced backend and logger the verb uses while it runs. Made only with telemetry on and
 * something registered to receive it.
 */
export class Observation {
  outcome: ObservedOutcome = "failed";
  fencingId: number | undefined;
  /** The verb's own observation, under a delivery. */
  inner: Observation | undefined;
  private readonly attributes: Attributes;

  private constructor(
    private readonly otel: OtelApi,
    private readonly tracer: Tracer | null,
    private readonly meters: Instruments | null,
    readonly settings: TelemetrySettings,
    readonly span: Span | undefined,
    readonly context: Context | undefined,
    readonly verb: string,
    readonly backend: string,
    /** Whether this observation adds to the outcome counter (a verb under a delivery does not). */
    private readonly counted: boolean,
  ) {
    this.attributes = { [ATTR.verb]: verb, [ATTR.backend]: backend };
  }

  /**
   * True when nothing can record: the API is absent, or it is there but no SDK, context
   * manager or propagator was ever registered and no provider was passed. The check every
   * call makes before any other telemetry work.
   */
  static idle(settings: TelemetrySettings): boolean {
    return (
      !api ||
      (settings.tracerProvider === undefined &&
        settings.meterProvider === undefined &&
        (globalThis as Record<symbol, unknown>)[OTEL_GLOBAL] === undefined)
    );
  }

  /**
   * Start observing a verb (`under` a delivery) or a delivery (`describeDelivery` given), or
   * undefined when nothing would be recorded. The API must have settled
   * ({@link telemetryApiSettled}); call it only when {@link Observation.idle} is false.
   */
  static start(
    settings: TelemetrySettings,
    verb: string,
    backend: string,
    key: string | undefined,
    under?: Observation,
    describeDelivery?: () => DeliveryTrace,
  ): Observation | undefined {
    const otel = api;
    if (!otel) return undefined;
    const tracer = under ? under.tracer : tracerOf(otel, settings);
    const meters = under ? under.meters : instrumentsOf(otel, settings);
    if (tracer === null && meters === null) return undefined;
    let span: Span | undefined;
    let context: Context | undefined;
    if (tracer !== null) {
      const trace = describeDelivery?.();
      const parent = under?.context ?? parentContext(otel, trace?.parent);
      const attributes: Attributes = { [ATTR.verb]: verb, [ATTR.backend]: backend };
      if (key !== undefined && settings.recordKey) attributes[ATTR.key] = key;
      if (trace) {
        attributes[ATTR.system] = "gcp_pubsub";
        attributes[ATTR.operation] = "process";
        attributes[ATTR.surface] = trace.surface;
        if (trace.messageId) attributes[ATTR.messageId] = trace.messageId;
        if (trace.subscription) attributes[ATTR.subscription] = trace.subscription;
        if (trace.deliveryAttempt !== undefined)
          attributes[ATTR.deliveryAttempt] = trace.deliveryAttempt;
      }
      const name = trace
        ? `process ${trace.subscription ?? "gcp_pubsub"}`
        : `${INSTRUMENTATION_NAME} ${verb}`;
      const kind = trace ? SPAN_KIND_CONSUMER : SPAN_KIND_INTERNAL;
      span = tracer.startSpan(name, { kind, attributes }, parent);
      if (span.isRecording()) context = otel.trace.setSpan(parent, span);
      else span = undefined;
    }
    if (span === undefined && meters === null) return undefined;
    const observation = new Observation(
      otel,
      tracer,
      meters,
      settings,
      span,
      context,
      verb,
      backend,
      under === undefined,
    );
    if (under) under.inner = observation;
    return observation;
  }

  /** The key resolved: on the span only when `recordKey` allows it. */
  keyed(key: string): void {
    if (this.settings.recordKey) this.span?.setAttribute(ATTR.key, key);
  }

  /** The verb's own observation under this delivery: a child span, not counted again. */
  startVerb(key: string): Observation | undefined {
    return Observation.start(this.settings, this.verb, this.backend, key, this);
  }

  /** Run `fn` with this observation's span active, so spans and logs inside find it. */
  within<T>(fn: () => T): T {
    return this.context === undefined ? fn() : this.otel.context.with(this.context, fn);
  }

  /** A claim round trip: timed, and a child span. */
  async claim(backend: LockBackend, key: string, leaseMs: number): Promise<ClaimOutcome> {
    const child = this.child("claim");
    const t0 = performance.now();
    try {
      const outcome = await backend.claim(key, leaseMs);
      child?.setAttribute("idempotency.claim.status", outcome.status);
      if (outcome.status === "won") {
        this.fencingId = outcome.claim.fencingId;
        child?.setAttribute(ATTR.fencingId, outcome.claim.fencingId);
      }
      return outcome;
    } catch (error) {
      failSpan(child, error);
      throw error;
    } finally {
      child?.end();
      this.meters?.claimDuration.record((performance.now() - t0) / 1000, this.attributes);
    }
  }

  /** complete, release, renew or completeInTransaction: a child span around the port call. */
  async port<T>(name: string, claim: Claim, call: () => Promise<T>): Promise<T> {
    const child = this.child(name);
    child?.setAttribute(ATTR.fencingId, claim.fencingId);
    try {
      const result = await call();
      if (typeof result === "boolean") child?.setAttribute("idempotency.fenced_out", !result);
      return result;
    } catch (error) {
      failSpan(child, error);
      throw error;
    } finally {
      child?.end();
    }
  }

  /** The body ran for `ms`: its duration histogram. */
  bodyRan(startedAt: number): void {
    this.meters?.bodyDuration.record((performance.now() - startedAt) / 1000, this.attributes);
  }

  /** The time spent claiming, retries on a held key included. */
  waited(ms: number): void {
    this.span?.setAttribute(ATTR.waitedMs, ms);
  }

  /** End with `outcome`; `error` marks the span failed. Counts the outcome once. */
  end(outcome: ObservedOutcome, error?: unknown): void {
    this.outcome = outcome;
    const { span } = this;
    if (span) {
      span.setAttribute(ATTR.outcome, outcome);
      if (this.fencingId !== undefined) span.setAttribute(ATTR.fencingId, this.fencingId);
      if (error !== undefined) failSpan(span, error);
      else if (outcome === "fenced_out" || outcome === "complete_failed") {
        span.setStatus({ code: STATUS_ERROR, message: outcome });
      }
      span.end();
    }
    if (this.counted && this.meters) {
      this.meters.outcomes.add(1, { ...this.attributes, [ATTR.outcome]: outcome });
    }
  }

  /** The log fields that put a line under this observation's span in Cloud Logging. */
  logFields(): LogFields | undefined {
    const span = this.span;
    return span === undefined ? undefined : traceLogFields(span.spanContext(), this.settings);
  }

  /** `logger` with this span's trace fields added to every line (the guard stays inside). */
  logger(logger: Logger): Logger {
    const fields = this.logFields();
    if (fields === undefined) return logger;
    const add = (more: LogFields | undefined): LogFields =>
      more ? { ...more, ...fields } : fields;
    return {
      info: (message, more) => logger.info(message, add(more)),
      warn: (message, more) => logger.warn(message, add(more)),
      error: (message, more) => logger.error(message, add(more)),
    };
  }

  private child(name: string): Span | undefined {
    if (this.tracer === null || this.context === undefined) return undefined;
    return this.tracer.startSpan(
      `${INSTRUMENTATION_NAME} ${name}`,
      { kind: SPAN_KIND_CLIENT, attributes: this.attributes },
      this.context,
    );
  }
}

function parentContext(otel: OtelApi, remote: SpanContext | undefined): Context {
  const active = otel.context.active();
  // A remote parent from the message wins over whatever span happens to be active.
  return remote === undefined ? active : otel.trace.setSpanContext(active, remote);
}

/** Error status and the exception, its text read through {@link errorText} (total, guarded). */
function failSpan(span: Span | undefined, error: unknown): void {
  if (span === undefined) return;
  const text = errorText(error);
  span.recordException({ message: text, name: exceptionName(error) });
  span.setStatus({ code: STATUS_ERROR, message: text });
}

function exceptionName(error: unknown): string {
  const text = errorText(error);
  const colon = text.indexOf(": ");
  return colon > 0 && colon < 80 ? text.slice(0, colon) : "Error";
}

/**
 * The LogEntry fields Cloud Logging joins to a trace: `logging.googleapis.com/trace` (needs a
 * project: the option, else GOOGLE_CLOUD_PROJECT or GCLOUD_PROJECT), `spanId` and
 * `trace_sampled`.
 */
export function traceLogFields(
  spanContext: SpanContext,
  settings: TelemetrySettings | undefined,
): LogFields {
  const project =
    settings?.projectId ?? process.env.GOOGLE_CLOUD_PROJECT ?? process.env.GCLOUD_PROJECT;
  const fields: Record<string, unknown> = {};
  if (project !== undefined && project !== "") {
    fields["logging.googleapis.com/trace"] = `projects/${project}/traces/${spanContext.traceId}`;
  }
  fields["logging.googleapis.com/spanId"] = spanContext.spanId;
  fields["logging.googleapis.com/trace_sampled"] = (spanContext.traceFlags & 1) === 1;
  return fields;
}

/**
 * The backend as an observed verb calls it: every port call goes through the observation
 * once, here. Made per observed call only; an unobserved call uses the backend itself.
 */
export function observedBackend(backend: LockBackend, observation: Observation): LockBackend {
  const traced: LockBackend = {
    claim: (key, leaseMs) => observation.claim(backend, key, leaseMs),
    complete: (claim) => observation.port("complete", claim, () => backend.complete(claim)),
    release: (claim) => observation.port("release", claim, () => backend.release(claim)),
  };
  const renew = backend.renew;
  if (renew !== undefined) {
    traced.renew = (claim, leaseMs) =>
      observation.port("renew", claim, () => renew.call(backend, claim, leaseMs));
  }
  const inTransaction = (backend as { completeInTransaction?: unknown }).completeInTransaction;
  if (typeof inTransaction === "function") {
    (traced as unknown as Record<string, unknown>).completeInTransaction = (
      claim: Claim,
      body: unknown,
    ) =>
      observation.port("complete", claim, () =>
        (inTransaction as (c: Claim, b: unknown) => Promise<unknown>).call(backend, claim, body),
      );
  }
  return traced;
}
