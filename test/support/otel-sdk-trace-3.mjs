// OpenTelemetry JS 3 renamed @opentelemetry/sdk-trace-base to @opentelemetry/sdk-trace, its
// BasicTracerProvider to TracerProvider, and its SimpleSpanProcessor takes `{ exporter }` and
// exports after an await. Under the newest majors (npm run test:newest), vitest.config.ts points
// imports of the old name here, so the telemetry tests run on both: the processor below hands
// each ended span to the exporter at once, as 2.x's did, so a test reads its spans right after
// the call that ended them.
import { TraceFlags } from "@opentelemetry/api";

export {
  InMemorySpanExporter,
  TracerProvider as BasicTracerProvider,
} from "@opentelemetry/sdk-trace";

export class SimpleSpanProcessor {
  constructor(exporter) {
    this.exporter = exporter;
  }
  onStart() {}
  onEnd(span) {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    this.exporter.export([span], () => {});
  }
  forceFlush() {
    return Promise.resolve();
  }
  shutdown() {
    return this.exporter.shutdown();
  }
}
