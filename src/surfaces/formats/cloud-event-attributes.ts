// What the gateway reads of a CloudEvent that is not a Pub/Sub message: its attributes, checked
// against the CloudEvents type system, and the idempotency key made of its `source` and `id`,
// the pair the CloudEvents spec makes unique (spec 1.0, "id": "Producers MUST ensure that
// source + id is unique for each distinct event").
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { MAX_KEY_BYTES } from "../../core/constants.js";
import { InvalidKey } from "../../core/errors.js";
import {
  type CloudEventAttributes,
  cloudEventMessageId,
  fail,
  isObject,
  isTimestamp,
  MESSAGE_PUBLISHED_TYPE,
  shown,
} from "./parsed-message.js";

/** The attributes the spec names; anything else is an extension. */
const NAMED = new Set([
  "specversion",
  "id",
  "source",
  "type",
  "datacontenttype",
  "dataschema",
  "subject",
  "time",
]);
const REQUIRED = ["specversion", "id", "source", "type"] as const;

/** Attribute names are lower-case ASCII letters and digits (spec 1.0, "Attribute Naming Convention"). */
export const ATTRIBUTE_NAME = /^[a-z0-9]+$/;

/**
 * Why `text` is not a CloudEvents String, or undefined: the spec disallows the control
 * characters U+0000–U+001F and U+007F–U+009F, surrogate code points and noncharacters.
 */
export function cloudEventStringFlaw(text: string): string | undefined {
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c <= 0x1f || (c >= 0x7f && c <= 0x9f)) {
      return `contains the control character U+${hex(c)} at index ${i}`;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (c > 0xdbff || next < 0xdc00 || next > 0xdfff) {
        return `contains a lone surrogate U+${hex(c)} at index ${i}`;
      }
      c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
      i++;
    }
    if ((c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) === 0xfffe) {
      return `contains the noncharacter U+${hex(c)}`;
    }
  }
  return undefined;
}

const hex = (c: number) => c.toString(16).toUpperCase().padStart(4, "0");

/**
 * Check the attributes read from a request (`where` names where they came from in reasons)
 * and freeze them: the four required ones present and non-empty, `specversion` 1.0, `time` a
 * timestamp, every value a CloudEvents String.
 */
export function checkedAttributes(
  attributes: ReadonlyMap<string, string>,
  where: (name: string) => string,
): CloudEventAttributes {
  for (const name of REQUIRED) {
    const value = attributes.get(name);
    if (value === undefined) fail(`the CloudEvent has no ${where(name)}`);
    if (value === "") fail(`the CloudEvent's ${where(name)} is empty`);
  }
  const extensions: Record<string, string> = {};
  const named: Record<string, string> = {};
  for (const [name, value] of attributes) {
    const flaw = cloudEventStringFlaw(value);
    if (flaw !== undefined) fail(`the CloudEvent's ${where(name)} ${flaw}`);
    // Defined, not assigned: the names come from the request (`__proto__` is a valid one).
    Object.defineProperty(NAMED.has(name) ? named : extensions, name, {
      value,
      enumerable: true,
    });
  }
  if (named.specversion !== "1.0") {
    fail(`the CloudEvent's ${where("specversion")} is ${shown(named.specversion)}, not "1.0"`);
  }
  if (named.time !== undefined && !isTimestamp(named.time)) {
    fail(`the CloudEvent's ${where("time")} is not a timestamp: ${shown(named.time)}`);
  }
  return Object.freeze({ ...named, extensions: Object.freeze(extensions) }) as CloudEventAttributes;
}

/**
 * The idempotency key of a CloudEvent that is not a Pub/Sub message: its `source` and `id`
 * as the JSON array `[source, id]` (JSON.stringify: no spaces, non-ASCII characters as
 * they are), which no two distinct pairs share. When that text is over
 * {@link MAX_KEY_BYTES} it is replaced by `cloudevent-sha256:` and the hex SHA-256 of it, so
 * an event with a long source is still processed once rather than refused. Throws
 * {@link InvalidKey} for an empty source or id.
 *
 * @example
 * ```ts
 * import { cloudEventSourceIdKey } from "gcp-pubsub-idempotency";
 *
 * // The key to `inspect` or `release` for a Cloud Storage event:
 * cloudEventSourceIdKey("//storage.googleapis.com/projects/_/buckets/invoices", "7315150283471224");
 * // '["//storage.googleapis.com/projects/_/buckets/invoices","7315150283471224"]'
 * ```
 */
export function cloudEventSourceIdKey(source: string, id: string): string {
  if (typeof source !== "string" || source === "" || typeof id !== "string" || id === "") {
    throw new InvalidKey(
      `a CloudEvent key needs a non-empty source and id, got ${shown(source)} and ${shown(id)}`,
    );
  }
  const key = JSON.stringify([source, id]);
  if (key.length * 3 <= MAX_KEY_BYTES || Buffer.byteLength(key, "utf8") <= MAX_KEY_BYTES) {
    return key;
  }
  return `cloudevent-sha256:${createHash("sha256").update(key, "utf8").digest("hex")}`;
}

/**
 * The default idempotency key of a CloudEvent as {@link idempotent} receives it: the Pub/Sub
 * messageId for a `messagePublished` event (or one without a type), {@link cloudEventSourceIdKey}
 * for any other type. Undefined when the event carries no usable id (refused, fail closed).
 *
 * @example
 * ```ts
 * import { cloudEventKey, idempotent, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * // Namespace the default key per service.
 * const key = (event: unknown) => {
 *   const id = cloudEventKey(event);
 *   return id === undefined ? undefined : `audit:${id}`;
 * };
 * const handler = idempotent({ backend: new InMemoryLock(), key }, async () => {});
 * ```
 */
export function cloudEventKey(event: unknown): string | undefined {
  if (!isObject(event)) return undefined;
  const { type } = event;
  if (type === undefined || type === MESSAGE_PUBLISHED_TYPE) return cloudEventMessageId(event);
  const { source, id } = event;
  if (typeof source !== "string" || typeof id !== "string" || source === "" || id === "") {
    return undefined;
  }
  if (cloudEventStringFlaw(source) !== undefined || cloudEventStringFlaw(id) !== undefined) {
    return undefined;
  }
  return cloudEventSourceIdKey(source, id);
}
