// The request headers the push formats read, as HTTP delivers them: names in any case, a
// header sent twice seen as such, and UTF-8 that node:http handed over as Latin-1 read back.
import { Buffer } from "node:buffer";
import { fail, shown } from "./fields.js";

/**
 * The request headers structure the HTTP surface reads; `node:http`'s `IncomingHttpHeaders`
 * fits it.
 *
 * @example
 * ```ts
 * import type { HttpHeadersLike } from "gcp-pubsub-idempotency";
 *
 * const headers: HttpHeadersLike = { "content-type": "application/json" };
 * ```
 */
export type HttpHeadersLike = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The parts of a request {@link parsePushRequest} reads besides the body: the headers, and
 * `headersDistinct` (Node 18.3+) when the request has it, to see a header sent twice.
 *
 * @example
 * ```ts
 * import { parsePushRequest, type PushRequestHeaders } from "gcp-pubsub-idempotency";
 *
 * const request: PushRequestHeaders = { headers: { "x-goog-pubsub-message-id": "42" } };
 * parsePushRequest(request, Buffer.from("raw data")).messageId; // "42"
 * ```
 */
export interface PushRequestHeaders {
  /** The request headers; names in any case. */
  readonly headers?: HttpHeadersLike;
  /** Every value of each header, as `node:http` keeps them (`req.headersDistinct`). */
  readonly headersDistinct?: Readonly<Record<string, readonly string[] | undefined>>;
}

// Payload unwrapping, https://docs.cloud.google.com/pubsub/docs/payload-unwrapping: with
// write metadata, Pub/Sub writes the message metadata to `x-goog-pubsub-<KEY>` headers
// (subscription-name, message-id, publish-time, ordering-key) and each attribute to a header
// of its own name (PushConfig.NoWrapper.write_metadata, https://cloud.google.com/java/docs/
// reference/google-cloud-pubsub/latest/com.google.pubsub.v1.PushConfig.NoWrapperOrBuilder).
// No delivery attempt is written.
export const MESSAGE_ID = "x-goog-pubsub-message-id";
export const SUBSCRIPTION = "x-goog-pubsub-subscription-name";
export const PUBLISH_TIME = "x-goog-pubsub-publish-time";
export const ORDERING_KEY = "x-goog-pubsub-ordering-key";
/** What the Pub/Sub emulator (gcloud 528) writes for the ordering key instead. */
export const EMULATOR_ORDERING_KEY = "x-goog-ordering-key";

/** The headers the push formats read, by lower-case name, with every value each came with. */
export class RequestHeaders {
  /** Made on the first header read: most of a request's headers are not. */
  private values: Map<string, string[]> | undefined;

  constructor(request: PushRequestHeaders) {
    const { headers, headersDistinct } = request;
    if (headers !== undefined && headers !== null) {
      if (typeof headers !== "object") fail(`the request headers are ${shown(headers)}`);
      for (const name of Object.keys(headers)) {
        if (mayBeRead(name)) this.add(name, headers[name]);
      }
    }
    // node:http joins a repeated header into one "a, b" value; headersDistinct keeps each.
    if (
      headersDistinct !== undefined &&
      headersDistinct !== null &&
      typeof headersDistinct === "object"
    ) {
      for (const name of Object.keys(headersDistinct)) {
        if (!mayBeRead(name)) continue;
        const lower = name.toLowerCase();
        const all = headersDistinct[name];
        if (!isRead(lower) || !Array.isArray(all) || all.length < 2) continue;
        this.values ??= new Map();
        this.values.set(
          lower,
          all.map((value) => headerText(lower, value)),
        );
      }
    }
  }

  private add(name: string, value: unknown): void {
    const lower = name.toLowerCase();
    if (!isRead(lower) || value === undefined) return;
    const list = Array.isArray(value) ? value : [value];
    this.values ??= new Map();
    const seen = this.values.get(lower) ?? [];
    for (const one of list) seen.push(headerText(lower, one));
    this.values.set(lower, seen);
  }

  /** The one value of a header; undefined when absent; a reason when it came more than once. */
  one(name: string): string | undefined {
    const all = this.values?.get(name);
    if (all === undefined || all.length === 0) return undefined;
    if (all.length > 1) fail(`the ${name} header is sent ${all.length} times`);
    return all[0];
  }

  has(name: string): boolean {
    return (this.values?.get(name)?.length ?? 0) > 0;
  }

  /** The names read that start with `prefix` and came with a value. */
  named(prefix: string): string[] {
    if (this.values === undefined) return [];
    return [...this.values.keys()].filter((name) => name.startsWith(prefix) && this.has(name));
  }
}

/**
 * Whether a header name, in any case, can be one {@link isRead} keeps: every one starts with
 * `c` or `x`. Most of a request's headers (host, user-agent, authorization, traceparent, …)
 * are passed over on their first character, without a lower-case copy of the name.
 */
function mayBeRead(name: string): boolean {
  const first = name.charCodeAt(0) | 0x20;
  return first === 0x63 || first === 0x78;
}

/** The headers some format reads; no other is copied (attributes are read off `headers`). */
const isRead = (name: string) =>
  name === "content-type" ||
  name === EMULATOR_ORDERING_KEY ||
  name.startsWith("ce-") ||
  name.startsWith("x-goog-pubsub-");

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A header value as text. node:http hands header bytes over one character per byte, so
 * UTF-8 sent as it is arrives as Latin-1 look-alikes: read those back as UTF-8.
 */
export function headerText(name: string, value: unknown): string {
  if (typeof value !== "string") fail(`the ${name} header is ${shown(value)}, not text`);
  let high = false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c > 0xff) return value; // made in JavaScript, not read off the wire
    if (c >= 0x80) high = true;
  }
  if (!high) return value;
  try {
    return utf8.decode(Buffer.from(value, "latin1"));
  } catch {
    return value;
  }
}

/** The media type of a content-type value, lower case, without parameters. */
export function mediaType(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const end = contentType.indexOf(";");
  return (end === -1 ? contentType : contentType.slice(0, end)).trim().toLowerCase();
}

/** Whether a media type declares a JSON body (`application/json`, `text/json`, `…+json`). */
export function declaredJson(media: string | undefined): media is string {
  return (
    media === "application/json" ||
    media === "text/json" ||
    (media?.endsWith("+json") === true && media.includes("/"))
  );
}
