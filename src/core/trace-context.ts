// The W3C trace context a message carries, read as hostile input: a `traceparent` of exactly
// the shape https://www.w3.org/TR/trace-context/#traceparent-header allows, or nothing. Never
// throws; an invalid value is ignored, and the delivery starts a trace of its own.
import type { SpanContext } from "@opentelemetry/api";

/** The attribute `@google-cloud/pubsub`'s OpenTelemetry support writes on a published message. */
export const PUBSUB_TRACEPARENT_ATTRIBUTE = "googclient_traceparent";

// version "-" trace-id "-" parent-id "-" flags, then (future versions only) "-" and more.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[\x21-\x7e]*)?$/;
const ALL_ZERO = /^0+$/;
/** Longer than any traceparent a future version could reasonably send: not parsed at all. */
const MAX_LENGTH = 512;

/** The remote span context of a `traceparent` value, or undefined when it is not a valid one. */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  if (typeof value !== "string" || value.length < 55 || value.length > MAX_LENGTH) return undefined;
  const match = TRACEPARENT.exec(value);
  if (match === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string | undefined,
  ];
  if (version === "ff") return undefined;
  // Version 00 has exactly four fields; a later version may append more after a dash.
  if (version === "00" && rest !== undefined) return undefined;
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & 0xff, isRemote: true };
}

/** The first valid context among `candidates`, in order; undefined when none is valid. */
export function firstTraceparent(...candidates: unknown[]): SpanContext | undefined {
  for (const candidate of candidates) {
    // A repeated header arrives as an array: W3C says to ignore it rather than pick one.
    const context = parseTraceparent(candidate);
    if (context !== undefined) return context;
  }
  return undefined;
}
