/**
 * What telemetry costs the gateway, over the instant backend: `lock()` cycles and
 * `idempotentHttp` pushes with telemetry off, on with the API loaded but no SDK registered
 * (the default when `@opentelemetry/api` is installed and nothing is set up), and on with the
 * SDK recording every span and metric (a BatchSpanProcessor, as in production) into
 * exporters that drop them. The variants take turns,
 * round after round, so load on the machine hits all alike; each is the median of its rounds.
 */
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from "@opentelemetry/sdk-trace-base";
import type { HttpResponseLike, TelemetryOptions } from "gcp-pubsub-idempotency";
import { InstantBackend } from "./gateway-calls.js";
import { publishedBuild } from "./published-build.js";

export type TelemetryVariant = "off" | "noSdk" | "sdk";
export const TELEMETRY_VARIANTS: readonly TelemetryVariant[] = ["off", "noSdk", "sdk"];

export interface TelemetryResult {
  cycles: number;
  pushes: number;
  rounds: number;
  /** lock() cycles per second, median of the rounds. */
  lock: Record<TelemetryVariant, number>;
  /** idempotentHttp pushes per second, median of the rounds. */
  push: Record<TelemetryVariant, number>;
  /**
   * Each round's rate, in round order: the variants took turns inside a round, so a ratio
   * of two variants is taken round by round (its spread is what the target table judges).
   */
  lockRounds: Record<TelemetryVariant, number[]>;
  pushRounds: Record<TelemetryVariant, number[]>;
}

/** Takes every span and drops it: the SDK's whole cost, no I/O. */
class DroppingExporter implements SpanExporter {
  export(_spans: ReadableSpan[], done: (result: { code: number }) => void): void {
    done({ code: 0 }); // ExportResultCode.SUCCESS
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** A reader that is never asked: metrics aggregate in the SDK and go nowhere. */
class IdleReader extends MetricReader {
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

async function rate(n: number, fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

export async function telemetryBench(cycles: number, rounds: number): Promise<TelemetryResult> {
  const { core, testing } = await publishedBuild();
  const { idempotentHttp, lock } = core;
  const { pushBody } = testing;
  const sdk: TelemetryOptions = {
    tracerProvider: new BasicTracerProvider({
      spanProcessors: [new BatchSpanProcessor(new DroppingExporter())],
    }),
    meterProvider: new MeterProvider({ readers: [new IdleReader()] }),
  };
  const telemetry: Record<TelemetryVariant, boolean | TelemetryOptions> = {
    off: false,
    noSdk: true, // the default spelled out: on, with the global providers, none registered
    sdk,
  };
  const logger = { info() {}, warn() {}, error() {} };
  const body = pushBody({ orderId: "4711" }, { messageId: "bench-1" });
  const res: HttpResponseLike = { statusCode: 200, end: () => undefined };
  const pushes = Math.max(1_000, Math.round(cycles / 20));
  const ops = TELEMETRY_VARIANTS.map((variant) => {
    const backend = new InstantBackend();
    const options = { backend, leaseMs: 60_000, logger, telemetry: telemetry[variant] };
    const push = idempotentHttp(options, () => undefined);
    return {
      variant,
      lock: () => lock("order-123", options, () => undefined),
      push: () => push({ headers: {}, body }, res),
    };
  });
  // Warm every path (and the API's one import) before anything is timed.
  for (const op of ops) {
    await rate(Math.min(cycles, 20_000), op.lock);
    await rate(Math.min(pushes, 5_000), op.push);
  }
  // The SDK is ~20× slower per call: time it over a tenth as many, so the run stays short.
  const share = (variant: TelemetryVariant, n: number) =>
    variant === "sdk" ? Math.max(100, Math.round(n / 10)) : n;
  const settle = async () => {
    // Nothing of the SDK's (a batch export, a collection) may run while another variant is timed.
    await (sdk.tracerProvider as BasicTracerProvider).forceFlush();
    (globalThis as { gc?: () => void }).gc?.();
  };
  const lockRates: Record<TelemetryVariant, number[]> = { off: [], noSdk: [], sdk: [] };
  const pushRates: Record<TelemetryVariant, number[]> = { off: [], noSdk: [], sdk: [] };
  for (let round = 0; round < rounds; round++) {
    // Rotate who goes first, so no variant always runs on a cooler or warmer machine.
    for (let k = 0; k < ops.length; k++) {
      const op = ops[(k + round) % ops.length]!;
      await settle();
      lockRates[op.variant].push(await rate(share(op.variant, cycles), op.lock));
      await settle();
      pushRates[op.variant].push(await rate(share(op.variant, pushes), op.push));
    }
  }
  const medians = (rates: Record<TelemetryVariant, number[]>) => ({
    off: median(rates.off),
    noSdk: median(rates.noSdk),
    sdk: median(rates.sdk),
  });
  return {
    cycles,
    pushes,
    rounds,
    lock: medians(lockRates),
    push: medians(pushRates),
    lockRounds: lockRates,
    pushRounds: pushRates,
  };
}
