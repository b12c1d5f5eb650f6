// The real OpenTelemetry SDK with in-memory exporters, for the telemetry tests: spans kept by
// an InMemorySpanExporter, metrics read on demand through a MetricReader.
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { type DataPoint, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";

class OnDemandReader extends MetricReader {
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

let contextManager: AsyncLocalStorageContextManager | undefined;

/** A context manager, so spans started inside a body find the verb's span. Once per process. */
export function useContextManager(): void {
  if (contextManager) return;
  contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
}

export interface TelemetryHarness {
  tracerProvider: BasicTracerProvider;
  meterProvider: MeterProvider;
  /** Finished spans, oldest first. */
  spans(): ReadableSpan[];
  /** The one finished span named `name` (throws unless exactly one). */
  span(name: string): ReadableSpan;
  /** The data points of the instrument `name`. */
  points(name: string): Promise<DataPoint<unknown>[]>;
  /** The outcome counter as `outcome|backend|verb` → count. */
  outcomes(): Promise<Record<string, number>>;
  reset(): void;
}

export function telemetryHarness(): TelemetryHarness {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const points = async (name: string) => {
    const { resourceMetrics } = await reader.collect();
    return resourceMetrics.scopeMetrics
      .flatMap((scope) => scope.metrics)
      .filter((metric) => metric.descriptor.name === name)
      .flatMap((metric) => metric.dataPoints as DataPoint<unknown>[]);
  };
  return {
    tracerProvider,
    meterProvider,
    spans: () => exporter.getFinishedSpans(),
    span(name) {
      const found = exporter.getFinishedSpans().filter((s) => s.name === name);
      if (found.length !== 1) {
        throw new Error(
          `expected one span ${name}, got ${found.length} among ${exporter
            .getFinishedSpans()
            .map((s) => s.name)
            .join(", ")}`,
        );
      }
      return found[0] as ReadableSpan;
    },
    points,
    async outcomes() {
      const counts: Record<string, number> = {};
      for (const p of await points("idempotency.outcomes")) {
        const a = p.attributes;
        counts[`${a["idempotency.outcome"]}|${a["idempotency.backend"]}|${a["idempotency.verb"]}`] =
          p.value as number;
      }
      return counts;
    },
    reset: () => exporter.reset(),
  };
}

/** The span's parent span id, if any. */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

export { trace };
