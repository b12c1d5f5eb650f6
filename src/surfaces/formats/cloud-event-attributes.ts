// The attributes of a CloudEvent that reached the HTTP surface (binary or structured mode),
// checked against the CloudEvents type system (spec 1.0) as they are read.
import { fail, isTimestamp, shown } from "./fields.js";

/**
 * The attributes of a CloudEvent that reached {@link idempotentHttp} over HTTP (binary or
 * structured mode), as {@link ParsedMessage.event}. Frozen.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock, type CloudEventAttributes } from "gcp-pubsub-idempotency";
 *
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, async (message) => {
 *   const event: CloudEventAttributes | undefined = message.event;
 *   if (event?.type === "google.cloud.storage.object.v1.finalized") {
 *     console.log(event.subject, message.json<{ name: string }>().name);
 *   }
 * });
 * ```
 */
export interface CloudEventAttributes {
  /** Always `1.0`: the only version the gateway reads. */
  readonly specversion: string;
  /** Unique within `source`. */
  readonly id: string;
  /** Who produced the event, a URI reference such as `//storage.googleapis.com/projects/_/buckets/b`. */
  readonly source: string;
  /** What happened, such as `google.cloud.storage.object.v1.finalized`. */
  readonly type: string;
  /** The media type of the data: the `content-type` header in binary mode. */
  readonly datacontenttype?: string;
  /** The schema the data adheres to. */
  readonly dataschema?: string;
  /** What the event is about within `source`, such as `objects/report.csv`. */
  readonly subject?: string;
  /** When it happened, RFC 3339. */
  readonly time?: string;
  /** Every other attribute (Eventarc's `bucket`, `methodname`, `traceparent`, …) as text. */
  readonly extensions: Readonly<Record<string, string>>;
}

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
