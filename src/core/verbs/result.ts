// How once() keeps a body's result in the DONE record, and reads it back. The record holds
// text with a two-character marker, so a result that could not be kept is still told apart
// from one that was: "r:" + the codec's text, "u:" for undefined, "n:" + why nothing was kept.

import type { RecordedResult } from "../engine/cycle.js";
import { InvalidConfiguration, quoteKey } from "../errors.js";
import { storableText } from "../record-fields.js";
import { describe, readProperty } from "../validate.js";

/**
 * How {@link once} turns a result into text for the record and back. The default is JSON,
 * which keeps strings, numbers, booleans, null, arrays and plain objects; pass your own for
 * Dates, BigInts, Maps or classes. `encode` may throw (the result is then not recorded, and
 * later calls reject {@link Duplicate}); `decode` must accept what `encode` wrote.
 *
 * @example
 * ```ts
 * import type { ResultCodec } from "gcp-pubsub-idempotency";
 *
 * const dates: ResultCodec<Date> = {
 *   encode: (date) => date.toISOString(),
 *   decode: (text) => new Date(text),
 * };
 * ```
 */
export interface ResultCodec<T> {
  /** The result as text; it must be well-formed Unicode without U+0000. */
  encode(value: T): string;
  /** The result back from what `encode` wrote. */
  decode(text: string): T;
}

/** The default codec: JSON. `undefined` never reaches it (kept as its own marker). */
export const JSON_CODEC: ResultCodec<unknown> = {
  encode: (value) => {
    const text: unknown = JSON.stringify(value);
    if (typeof text !== "string") throw new TypeError(`it is ${describe(value)}`);
    return text;
  },
  decode: (text) => JSON.parse(text) as unknown,
};

/**
 * The default `maxResultBytes` of {@link once}: 64 KiB, far below every store's limit and
 * small enough that a duplicate's read stays cheap. A larger result is not recorded.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_RESULT_BYTES, InMemoryLock, once } from "gcp-pubsub-idempotency";
 *
 * // Allow a report four times the default size to be replayed.
 * const options = { backend: new InMemoryLock(), maxResultBytes: 4 * DEFAULT_MAX_RESULT_BYTES };
 * await once("reports:2026-12-05", options, async () => "a large report");
 * ```
 */
export const DEFAULT_MAX_RESULT_BYTES = 64 * 1024;

const VALUE = "r:";
const UNDEFINED = "u:";
const UNRECORDED = "n:";
const encoder = new TextEncoder();

/**
 * The text a result is recorded as, within `maxBytes` UTF-8 bytes (marker included). What
 * cannot be recorded becomes an "n:" text with the reason, never a throw: the body ran, and
 * the key must still complete.
 */
export function recordResult<T>(value: T, codec: ResultCodec<T>, maxBytes: number): RecordedResult {
  if (value === undefined) return { text: UNDEFINED };
  let text: unknown;
  try {
    text = codec.encode(value);
  } catch (error) {
    return unrecorded(
      codec === JSON_CODEC
        ? `JSON cannot encode the result (${reasonOf(error)}); pass options.codec`
        : `options.codec.encode threw: ${reasonOf(error)}`,
    );
  }
  if (typeof text !== "string") {
    return unrecorded(`options.codec.encode returned ${describe(text)}, not a string`);
  }
  if (!storableText(text)) {
    return unrecorded("the encoded result holds U+0000 or a lone surrogate, which no store keeps");
  }
  // Worst case 3 bytes per UTF-16 unit: only encode when the cheap bound does not settle it.
  const bound = (text.length + VALUE.length) * 3;
  if (bound > maxBytes) {
    const bytes = encoder.encode(text).length + VALUE.length;
    if (bytes > maxBytes) {
      return unrecorded(
        `the encoded result is ${bytes} bytes, over the limit of ${maxBytes} (options.maxResultBytes, and the backend's own)`,
      );
    }
  }
  return { text: VALUE + text };
}

function unrecorded(reason: string): RecordedResult {
  return { text: UNRECORDED + reason, unrecorded: reason };
}

function reasonOf(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return "an unreadable error";
  }
}

/** What a done record tells a later call: a value to replay, or why there is none. */
export type Replay<T> =
  | { readonly replayed: true; readonly value: T }
  | { readonly replayed: false; readonly why: string };

/**
 * Read a done record's result. A record without one was completed by lock() (or by a version
 * before results); one marked "n:" holds the reason it was not recorded. A text the codec
 * cannot decode rejects: nothing re-runs, and the caller learns its codec is wrong.
 */
export function replayResult<T>(
  key: string,
  text: string | undefined,
  codec: ResultCodec<T>,
): Replay<T> {
  if (text === undefined) {
    return { replayed: false, why: "; it was completed without a result (by lock() or a surface)" };
  }
  if (text.startsWith(UNDEFINED)) return { replayed: true, value: undefined as T };
  if (text.startsWith(UNRECORDED)) {
    return {
      replayed: false,
      why: `; no result was recorded when it completed (${text.slice(UNRECORDED.length)})`,
    };
  }
  if (!text.startsWith(VALUE))
    throw undecodable(key, `an unknown marker ${describe(text.slice(0, 2))}`);
  try {
    return { replayed: true, value: codec.decode(text.slice(VALUE.length)) };
  } catch (error) {
    throw undecodable(key, `options.codec.decode threw: ${reasonOf(error)}`, error);
  }
}

function undecodable(key: string, reason: string, cause?: unknown): InvalidConfiguration {
  return new InvalidConfiguration(
    `once(): the result recorded for key ${quoteKey(key)} could not be read back (${reason}); use the codec that recorded it`,
    { cause },
  );
}

/** `codec` checked once: an object with encode and decode functions; default JSON. */
export function codecOption<T>(value: unknown): ResultCodec<T> {
  if (value === undefined) return JSON_CODEC as ResultCodec<T>;
  if (value !== null && typeof value === "object") {
    const encode = readProperty("options.codec.encode", value, "encode");
    const decode = readProperty("options.codec.decode", value, "decode");
    if (typeof encode === "function" && typeof decode === "function")
      return value as ResultCodec<T>;
  }
  throw new InvalidConfiguration(
    `options.codec must be an object with encode(value) => string and decode(text) => value functions, got ${describe(value)}`,
  );
}
