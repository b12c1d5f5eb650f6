// `@opentelemetry/api` is an optional peer, never required at load time: imported once,
// lazily, the first time options with telemetry on are resolved. Until the import settles the
// traced paths await it; after, one check tells whether anything can record at all.
export type OtelApi = typeof import("@opentelemetry/api");

/**
 * The key of the API's global registry (major version 1, as the peer range says): while it is
 * unset, nothing (no SDK, no context manager, no propagator) was ever registered.
 */
const OTEL_GLOBAL = Symbol.for("opentelemetry.js.api.1");

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

/** Start the import if nobody has yet; options resolution calls it, so the first call waits less. */
export function preloadTelemetryApi(): void {
  if (api === undefined) void loadTelemetryApi();
}

/** True once the import settled; the traced paths await {@link loadTelemetryApi} only before. */
export function telemetryApiSettled(): boolean {
  return api !== undefined;
}

/** The API once it loaded; null when it is not installed or has not settled. */
export function otelApi(): OtelApi | null {
  return api ?? null;
}

/**
 * True when nothing can record: the API is absent, or it is there but no SDK, context manager
 * or propagator was ever registered and no provider was passed. Call it once settled.
 */
export function recordsNothing(settings: {
  readonly tracerProvider: unknown;
  readonly meterProvider: unknown;
}): boolean {
  return (
    !api ||
    (settings.tracerProvider === undefined &&
      settings.meterProvider === undefined &&
      (globalThis as Record<symbol, unknown>)[OTEL_GLOBAL] === undefined)
  );
}
