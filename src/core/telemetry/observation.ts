// One observed verb call or delivery: its span (when an SDK records spans), its metrics, and
// the traced port, body and logger the wrapper (trace.ts) hands to the engine. Its state is
// its own: what the port and body report, and the ending it is given once.
import type { Attributes, Context, Span, SpanContext, Tracer } from "@opentelemetry/api";
import type { CycleBody } from "../engine/cycle.js";
import { errorText } from "../logger.js";
import type { Claim, ClaimOptions, LockBackend } from "../port.js";
import type { LogFields, Logger } from "../types.js";
import { type OtelApi, otelApi } from "./api.js";
import { INSTRUMENTATION_NAME, type Instruments, instrumentsOf, tracerOf } from "./instruments.js";
import type { TelemetrySettings } from "./settings.js";

/**
 * What an observed verb or delivery did; `held` is a key held elsewhere (InProgress),
 * `ack_failed` an ack Pub/Sub refused (pull, exactly-once).
 */
export type ObservedOutcome =
  | "ran"
  | "duplicate"
  | "held"
  | "failed"
  | "fenced_out"
  | "complete_failed"
  | "payload_mismatch"
  | "unkeyed"
  | "invalid_key"
  | "unguarded"
  | "disabled"
  | "ack_failed";

/** How an observation ends: the outcome, the key once known, the error of a failure. */
export interface Ending {
  readonly kind: ObservedOutcome;
  readonly key?: string | undefined;
  readonly error?: unknown;
}

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

/** Made only with telemetry on and something registered to receive it. */
export class Observation {
  private fencingId: number | undefined;
  private claimingSince: number | undefined;
  private waitedMs: number | undefined;
  private readonly attributes: Attributes;

  private constructor(
    private readonly otel: OtelApi,
    private readonly tracer: Tracer | null,
    private readonly meters: Instruments | null,
    private readonly settings: TelemetrySettings,
    private readonly span: Span | undefined,
    /** The span's context, the parent of its children; undefined without a span. */
    readonly context: Context | undefined,
    /** Whether this observation adds to the outcome counter (a verb under a delivery does not). */
    private readonly counted: boolean,
    verb: string,
    backend: string,
  ) {
    this.attributes = { [ATTR.verb]: verb, [ATTR.backend]: backend };
  }

  /**
   * Start observing a verb (`under` a delivery) or a delivery (`describeDelivery` given), or
   * undefined when nothing would be recorded. Call it once the API has settled.
   */
  static start(
    settings: TelemetrySettings,
    verb: string,
    backend: string,
    key: string | undefined,
    under?: Observation,
    describeDelivery?: () => DeliveryTrace,
  ): Observation | undefined {
    const otel = otelApi();
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
    return new Observation(
      otel,
      tracer,
      meters,
      settings,
      span,
      context,
      under === undefined,
      verb,
      backend,
    );
  }

  /** Run `fn` with this observation's span active, so spans and logs inside find it. */
  within<T>(fn: () => T): T {
    return this.context === undefined ? fn() : this.otel.context.with(this.context, fn);
  }

  /**
   * `port` with every call a child span: claims timed (the claim histogram, the time spent
   * claiming, the fence won), complete, release, renew and completeInTransaction traced.
   */
  port(port: LockBackend): LockBackend {
    const traced: LockBackend = {
      claim: (key, leaseMs, options) => this.claim(port, key, leaseMs, options),
      complete: (claim, result) =>
        this.call("complete", claim, () =>
          result === undefined ? port.complete(claim) : port.complete(claim, result),
        ),
      release: (claim) => this.call("release", claim, () => port.release(claim)),
    };
    const renew = port.renew;
    if (renew !== undefined) {
      traced.renew = (claim, leaseMs) =>
        this.call("renew", claim, () => renew.call(port, claim, leaseMs));
    }
    const inTransaction = (port as { completeInTransaction?: unknown }).completeInTransaction;
    if (typeof inTransaction === "function") {
      const complete = inTransaction as (claim: Claim, body: unknown) => Promise<unknown>;
      (traced as unknown as Record<string, unknown>).completeInTransaction = (
        claim: Claim,
        body: unknown,
      ) => this.call("complete", claim, () => complete.call(port, claim, body));
    }
    return traced;
  }

  /** `body` with each run's duration recorded in the body histogram. */
  timed<T>(body: CycleBody<T>): CycleBody<T> {
    const meters = this.meters;
    if (meters === null) return body;
    return async (claim, signal, tx) => {
      const startedAt = performance.now();
      try {
        return await body(claim, signal, tx);
      } finally {
        meters.bodyDuration.record((performance.now() - startedAt) / 1000, this.attributes);
      }
    };
  }

  /** `logger` with this span's trace fields added to every line (the guard stays inside). */
  logger(logger: Logger): Logger {
    const span = this.span;
    if (span === undefined) return logger;
    const fields = traceLogFields(span.spanContext(), this.settings);
    const add = (more: LogFields | undefined): LogFields =>
      more ? { ...more, ...fields } : fields;
    return {
      info: (message, more) => logger.info(message, add(more)),
      warn: (message, more) => logger.warn(message, add(more)),
      error: (message, more) => logger.error(message, add(more)),
    };
  }

  /** End with the outcome: the span's attributes and status, and the counter, once. */
  end(ending: Ending): void {
    const { kind } = ending;
    const { span } = this;
    if (span) {
      span.setAttribute(ATTR.outcome, kind);
      if (ending.key !== undefined && this.settings.recordKey) {
        span.setAttribute(ATTR.key, ending.key);
      }
      if (this.fencingId !== undefined) span.setAttribute(ATTR.fencingId, this.fencingId);
      if (this.waitedMs !== undefined) span.setAttribute(ATTR.waitedMs, this.waitedMs);
      if (kind === "failed" || kind === "ack_failed") failSpan(span, ending.error);
      else if (kind === "fenced_out" || kind === "complete_failed") {
        span.setStatus({ code: STATUS_ERROR, message: kind });
      }
      span.end();
    }
    if (this.counted && this.meters) {
      this.meters.outcomes.add(1, { ...this.attributes, [ATTR.outcome]: kind });
    }
  }

  private async claim(
    port: LockBackend,
    key: string,
    leaseMs: number,
    options: ClaimOptions | undefined,
  ) {
    const child = this.child("claim");
    const startedAt = performance.now();
    this.claimingSince ??= startedAt;
    try {
      const outcome = await (options === undefined
        ? port.claim(key, leaseMs)
        : port.claim(key, leaseMs, options));
      child?.setAttribute("idempotency.claim.status", outcome.status);
      if (outcome.status === "won") {
        this.fencingId = outcome.claim.fencingId;
        child?.setAttribute(ATTR.fencingId, outcome.claim.fencingId);
      }
      this.waitedMs = performance.now() - this.claimingSince;
      return outcome;
    } catch (error) {
      failSpan(child, error);
      throw error;
    } finally {
      child?.end();
      this.meters?.claimDuration.record((performance.now() - startedAt) / 1000, this.attributes);
    }
  }

  private async call<T>(name: string, claim: Claim, call: () => Promise<T>): Promise<T> {
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
  span.recordException({ message: text, name: exceptionName(text) });
  span.setStatus({ code: STATUS_ERROR, message: text });
}

function exceptionName(text: string): string {
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
