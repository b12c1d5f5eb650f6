// The readers every format shares, for input the sender controls: one field of a parsed object,
// checked the same way whichever envelope carried it, and refused with a one-line reason
// (`malformed Pub/Sub message: …`) that the HTTP surface answers with a 400.
import { Buffer } from "node:buffer";
import { MalformedMessage } from "../../core/errors.js";

/** A JSON object as parsed: string keys, unknown values. */
export type Json = Record<string, unknown>;

export const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === "object" && !Array.isArray(value) && !isBytes(value);

export const isBytes = (value: unknown): value is Uint8Array => value instanceof Uint8Array;

/** How every reason of {@link fail} starts; the HTTP surface puts the format it read instead. */
export const MALFORMED_PREFIX = "malformed Pub/Sub message: ";

export function fail(reason: string): never {
  throw new MalformedMessage(`${MALFORMED_PREFIX}${reason}`);
}

/** A one-line, bounded rendering of an offending value for a reason text. */
export function shown(value: unknown): string {
  let text: string;
  if (value === undefined) text = "undefined";
  else if (typeof value === "string") text = JSON.stringify(value);
  else if (isBytes(value)) text = `<${value.byteLength} bytes>`;
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = Object.prototype.toString.call(value);
    }
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * One property of a hostile object, or undefined when it cannot be read without throwing: for
 * what a surface reads before (or without) parsing, such as a trace context or a log field.
 */
export function readQuietly(object: unknown, name: string): unknown {
  if (object === null || (typeof object !== "object" && typeof object !== "function")) {
    return undefined;
  }
  try {
    const descriptor = Object.getOwnPropertyDescriptor(object, name);
    // Only a plain data property: a getter is the sender's code, and reading must not run it.
    return descriptor !== undefined && "value" in descriptor ? descriptor.value : undefined;
  } catch {
    return undefined; // A Proxy whose trap throws.
  }
}

/** 1 for each character of the base64 alphabets Buffer decodes (standard and URL-safe). */
const BASE64_CHAR = (() => {
  const table = new Uint8Array(128);
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_";
  for (let i = 0; i < chars.length; i++) table[chars.charCodeAt(i)] = 1;
  return table;
})();
const EQUALS = 61;

/**
 * Whether `text` is base64 that Buffer decodes without skipping anything: alphabet
 * characters (standard or URL-safe), then at most two `=`, and never a lone sixth of a
 * byte at the end (a length of 4n + 1 before the padding). One pass, no regular
 * expression: a backtracking pattern overflowed the stack on a 4 MB payload.
 */
function isBase64(text: string): boolean {
  let end = text.length;
  let padding = 0;
  while (padding < 2 && end > 0 && text.charCodeAt(end - 1) === EQUALS) {
    end--;
    padding++;
  }
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128 || BASE64_CHAR[c] === 0) return false;
  }
  return end % 4 !== 1;
}

/**
 * Base64 data as {@link decodeBase64} accepts it, checked without decoding: the string, or
 * undefined when absent or null (no data). The push surface checks before the claim and
 * decodes only for a handler that runs.
 */
export function checkBase64(data: unknown, where = "message.data"): string | undefined {
  if (data === undefined || data === null) return undefined;
  if (typeof data !== "string") fail(`${where} must be a base64 string, got ${shown(data)}`);
  // Buffer.from(…, "base64") silently skips bad characters; check the alphabet first.
  if (!isBase64(data)) fail(`${where} is not valid base64`);
  return data;
}

/** Base64 that {@link checkBase64} accepted (or none), as bytes. */
export function decodeChecked(data: string | undefined): Buffer {
  return data === undefined ? Buffer.alloc(0) : Buffer.from(data, "base64");
}

export function decodeBase64(data: unknown, where = "message.data"): Buffer {
  return decodeChecked(checkBase64(data, where));
}

/**
 * `YYYY-MM-DDTHH:MM:SS`, an optional `.` and 1 to 9 digits, then `Z` or `±HH:MM`, every field
 * in range (a day up to 31 in any month, as Date.parse reads it): the shape Pub/Sub writes, and
 * a subset of what Date.parse accepts. Fixed widths but one, so no backtracking to speak of.
 */
const PLAIN_RFC3339 =
  /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

/**
 * Whether `text` is a timestamp `Date.parse` reads: a publishTime or a CloudEvent time. The
 * shape Pub/Sub writes is matched by {@link PLAIN_RFC3339}, several times cheaper than
 * Date.parse and never true where it is false; anything else is left to Date.parse.
 */
export function isTimestamp(text: string): boolean {
  return PLAIN_RFC3339.test(text) || !Number.isNaN(Date.parse(text));
}

/** A string member, or undefined when it is absent or null. */
export function stringField(owner: Json, name: string, where: string): string | undefined {
  return stringValue(owner[name], name, where);
}

/**
 * {@link stringField} of a value already read: a reader that names its fields (`raw.messageId`)
 * lets each read site learn its object's shape, where a read by a name passed in cannot.
 */
export function stringValue(value: unknown, name: string, where: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") fail(`${where}${name} must be a string, got ${shown(value)}`);
  return value;
}

/** Message attributes as {@link attributesOf} accepts them, checked without a copy. */
export function checkAttributes(value: unknown, where: string): void {
  if (value === undefined || value === null) return;
  if (!isObject(value)) fail(`${where}attributes must be an object, got ${shown(value)}`);
  for (const name of Object.keys(value)) {
    const v = value[name];
    if (typeof v !== "string")
      fail(`${where}attributes[${shown(name)}] must be a string, got ${shown(v)}`);
  }
}

/** Message attributes: an object of strings, copied; empty when absent or null. */
export function attributesOf(value: unknown, where: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) fail(`${where}attributes must be an object, got ${shown(value)}`);
  const out: Record<string, string> = {};
  for (const name of Object.keys(value)) {
    const v = value[name];
    if (typeof v !== "string")
      fail(`${where}attributes[${shown(name)}] must be a string, got ${shown(v)}`);
    // Assigned, except `__proto__`, which assignment would drop (or swap the prototype):
    // that one is defined. The object is frozen when the message is made.
    if (name === "__proto__") Object.defineProperty(out, name, { value: v, enumerable: true });
    else out[name] = v;
  }
  return out;
}

export function deliveryAttemptOf(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    fail(`deliveryAttempt must be a non-negative integer, got ${shown(value)}`);
  }
  return value;
}

/** A JSON object out of a parsed object, a JSON string or JSON bytes. */
export function jsonObject(body: unknown, what: string): Json {
  let value = body;
  if (isBytes(value)) value = Buffer.from(value).toString("utf8");
  if (typeof value === "string") {
    if (value.trim() === "") fail(`${what} is empty`);
    try {
      value = JSON.parse(value);
    } catch {
      fail(`${what} is not JSON`);
    }
  }
  if (!isObject(value)) fail(`${what} must be a JSON object, got ${shown(value)}`);
  return value;
}
