// The tracer and the instruments of each provider, made once per provider and kept.
import type { Counter, Histogram, Meter, Tracer } from "@opentelemetry/api";
import type { TelemetryTracerProvider } from "../types.js";
import type { OtelApi } from "./api.js";
import type { TelemetrySettings } from "./settings.js";

/** The instrumentation scope every span and instrument is created under. */
export const INSTRUMENTATION_NAME = "gcp-pubsub-idempotency";

export interface Instruments {
  readonly outcomes: Counter;
  readonly claimDuration: Histogram;
  readonly bodyDuration: Histogram;
}

const tracers = new WeakMap<object, Tracer | null>();
const instruments = new WeakMap<object, Instruments | null>();

/** The tracer of a provider, or null when it is the API's no-op (spans would record nothing). */
export function tracerOf(otel: OtelApi, settings: TelemetrySettings): Tracer | null {
  const provider = settings.tracerProvider ?? otel.trace.getTracerProvider();
  let tracer = tracers.get(provider);
  if (tracer === undefined) {
    const delegate = (provider as { getDelegate?: () => unknown }).getDelegate;
    // The global proxy without an SDK behind it hands out non-recording spans: skip them all.
    // A proxy is not cached, its delegate may be set later; a real provider is.
    if (typeof delegate === "function") {
      const real = delegate.call(provider) as object;
      if (real.constructor?.name === "NoopTracerProvider") return null;
      return tracerOf(otel, { ...settings, tracerProvider: real as TelemetryTracerProvider });
    }
    tracer = provider.getTracer(INSTRUMENTATION_NAME) as Tracer;
    tracers.set(provider, tracer);
  }
  return tracer;
}

/** The instruments of a provider, or null when it is the API's no-op meter. */
export function instrumentsOf(otel: OtelApi, settings: TelemetrySettings): Instruments | null {
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
