// The `telemetry` option, checked where it enters.
import { isArraySafe } from "../describe.js";
import { InvalidConfiguration } from "../errors.js";
import type { TelemetryMeterProvider, TelemetryTracerProvider } from "../types.js";
import { booleanOption, describe, knownOptions, readOptions, readProperty } from "../validate.js";
import { preloadTelemetryApi } from "./api.js";

/** The `telemetry` option after validation; `undefined` stands for `telemetry: false`. */
export interface TelemetrySettings {
  readonly tracerProvider: TelemetryTracerProvider | undefined;
  readonly meterProvider: TelemetryMeterProvider | undefined;
  readonly recordKey: boolean;
  readonly projectId: string | undefined;
}

/** Telemetry on with the global providers: shared by every omitted option. */
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
    preloadTelemetryApi();
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
  preloadTelemetryApi();
  return {
    tracerProvider: tracerProvider as TelemetryTracerProvider | undefined,
    meterProvider: meterProvider as TelemetryMeterProvider | undefined,
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
