// Which of the HTTP shapes a push request has, and the ParsedMessage in it:
// - a wrapped Pub/Sub push: a JSON body `{message, subscription}`;
// - an unwrapped push (`--push-no-wrapper`): the body is the message data; with
//   `--push-no-wrapper-write-metadata` the metadata comes as `x-goog-pubsub-*` headers;
// - a CloudEvent (Eventarc, Eventarc Advanced) in binary mode (`ce-*` headers, the body is the
//   data) or structured mode (`content-type: application/cloudevents+json`).
// Headers decide before the body does: a payload is the publisher's, and a field in it (a
// `message` of its own) must never choose the key. One file over 350 lines because the
// detection order is one decision: each format is recognised only after the ones before it.
import { Buffer } from "node:buffer";
import { MAX_KEY_BYTES } from "../../core/constants.js";
import { MalformedMessage } from "../../core/errors.js";
import type { MessageRef } from "../../core/logger.js";
import {
  ATTRIBUTE_NAME,
  type CloudEventAttributes,
  checkedAttributes,
  cloudEventStringFlaw,
} from "./cloud-event-attributes.js";
import { cloudEventSourceIdKey } from "./default-keys.js";
import {
  decodeBase64,
  fail,
  isBytes,
  isObject,
  isTimestamp,
  type Json,
  jsonObject,
  shown,
} from "./fields.js";
import { makeMessage, type ParsedMessage } from "./parsed-message.js";
import { MESSAGE_PUBLISHED_TYPE } from "./pubsub-cloud-event.js";
import { fromEnvelopeObject } from "./push-envelope.js";

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
const MESSAGE_ID = "x-goog-pubsub-message-id";
const SUBSCRIPTION = "x-goog-pubsub-subscription-name";
const PUBLISH_TIME = "x-goog-pubsub-publish-time";
const ORDERING_KEY = "x-goog-pubsub-ordering-key";
/** What the Pub/Sub emulator (gcloud 528) writes for the ordering key instead. */
const EMULATOR_ORDERING_KEY = "x-goog-ordering-key";

/**
 * The request headers that are never message attributes of an unwrapped push with metadata
 * (`--push-no-wrapper-write-metadata`), lower case: the headers HTTP, its clients, proxies,
 * Google's front end and tracing add. Pub/Sub writes each attribute as a header of its own
 * name beside these; every other header of such a request is an attribute in
 * `message.attributes`. An entry ending in `*` covers every name that starts with the text
 * before it (`x-goog-*`: Pub/Sub's own `x-goog-pubsub-*` metadata among them).
 *
 * What cannot survive the trip as an attribute, then: an attribute named like an entry (in
 * any case: `Content-Type`, `Host`, `From`, `Date`, `traceparent`, `x-goog-…`, `sec-…`) is
 * dropped; HTTP folds header names to lower case, so `orderId` arrives as
 * `attributes.orderid`, and two attributes whose names differ only in case arrive as one
 * header whose values are joined with `", "`; an attribute name that is not an HTTP header
 * name (a space, a colon) cannot be sent as a header at all. Key on attributes with
 * lower-case names, or use a wrapped push, which carries them exactly.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock, TRANSPORT_HEADERS } from "gcp-pubsub-idempotency";
 *
 * // Refuse to start with a business attribute that an unwrapped push would lose.
 * const keyAttribute = "po";
 * if (TRANSPORT_HEADERS.some((h) => (h.endsWith("*") ? keyAttribute.startsWith(h.slice(0, -1)) : h === keyAttribute))) {
 *   throw new Error(`attribute ${keyAttribute} cannot arrive as a header`);
 * }
 * const handler = idempotentHttp(
 *   { backend: new InMemoryLock(), key: ({ message }) => message.attributes[keyAttribute] },
 *   async () => {},
 * );
 * ```
 */
export const TRANSPORT_HEADERS: readonly string[] = Object.freeze([
  // Hop-by-hop and framing (RFC 9110 section 7.6.1, RFC 9112), HTTP/2 pseudo-headers.
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
  ":*",
  // Standard request headers a client writes.
  "host",
  "content-type",
  "content-length",
  "content-encoding",
  "content-language",
  "content-md5",
  "user-agent",
  "accept",
  "accept-charset",
  "accept-encoding",
  "accept-language",
  "expect",
  "from",
  "referer",
  "origin",
  "date",
  "cache-control",
  "pragma",
  "max-forwards",
  "range",
  "if-match",
  "if-none-match",
  "if-modified-since",
  "if-unmodified-since",
  "if-range",
  "priority",
  "sec-*",
  // Credentials.
  "authorization",
  "proxy-authorization",
  "cookie",
  // Proxies, load balancers and tracing.
  "via",
  "forwarded",
  "x-forwarded-*",
  "x-real-ip",
  "x-request-id",
  "x-cloud-trace-context",
  "traceparent",
  "tracestate",
  "baggage",
  // Google's front end, and Pub/Sub's own metadata (x-goog-pubsub-*).
  "x-goog-*",
]);

const TRANSPORT_EXACT = new Set(TRANSPORT_HEADERS.filter((name) => !name.endsWith("*")));
const TRANSPORT_PREFIXES = TRANSPORT_HEADERS.filter((name) => name.endsWith("*")).map((name) =>
  name.slice(0, -1),
);

/** Whether a lower-case header name is one of {@link TRANSPORT_HEADERS}. */
export function isTransportHeader(name: string): boolean {
  if (TRANSPORT_EXACT.has(name)) return true;
  for (const prefix of TRANSPORT_PREFIXES) if (name.startsWith(prefix)) return true;
  return false;
}

/** The headers this module reads, by lower-case name, with every value each came with. */
class RequestHeaders {
  private readonly values = new Map<string, string[]>();

  constructor(request: PushRequestHeaders) {
    const { headers, headersDistinct } = request;
    if (headers !== undefined && headers !== null) {
      if (typeof headers !== "object") fail(`the request headers are ${shown(headers)}`);
      for (const name of Object.keys(headers)) this.add(name, headers[name]);
    }
    // node:http joins a repeated header into one "a, b" value; headersDistinct keeps each.
    if (
      headersDistinct !== undefined &&
      headersDistinct !== null &&
      typeof headersDistinct === "object"
    ) {
      for (const name of Object.keys(headersDistinct)) {
        const lower = name.toLowerCase();
        const all = headersDistinct[name];
        if (!isRead(lower) || !Array.isArray(all) || all.length < 2) continue;
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
    const seen = this.values.get(lower) ?? [];
    for (const one of list) seen.push(headerText(lower, one));
    this.values.set(lower, seen);
  }

  /** The one value of a header; undefined when absent; a reason when it came more than once. */
  one(name: string): string | undefined {
    const all = this.values.get(name);
    if (all === undefined || all.length === 0) return undefined;
    if (all.length > 1) fail(`the ${name} header is sent ${all.length} times`);
    return all[0];
  }

  has(name: string): boolean {
    return (this.values.get(name)?.length ?? 0) > 0;
  }

  /** The names read that start with `prefix` and came with a value. */
  named(prefix: string): string[] {
    return [...this.values.keys()].filter((name) => name.startsWith(prefix) && this.has(name));
  }
}

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
function headerText(name: string, value: unknown): string {
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
function mediaType(contentType: string | undefined): string | undefined {
  return contentType?.split(";", 1)[0]?.trim().toLowerCase();
}

/**
 * Parse a push request of any format `idempotentHttp` accepts, from its headers and its body
 * (bytes, text, or an object a JSON body parser made): a wrapped push, an unwrapped push with
 * or without write-metadata, or a CloudEvent in binary or structured mode. The format is
 * decided in this order:
 *
 * 1. `content-type: application/cloudevents+json` → a structured CloudEvent;
 * 2. a `ce-specversion` or `ce-id` header → a binary CloudEvent;
 * 3. an `x-goog-pubsub-message-id` header → an unwrapped push with metadata (the body is the
 *    data, whatever it holds, unless it is a push body of that same messageId);
 * 4. a JSON object body with a `message` member → a wrapped push;
 * 5. anything else → an unwrapped push without metadata: `messageId` is `""`.
 *
 * Throws {@link MalformedMessage} with a one-line reason.
 *
 * @example
 * ```ts
 * import { parsePushRequest } from "gcp-pubsub-idempotency";
 *
 * // A Fastify or Hono route: hand over the headers and the raw body.
 * const message = parsePushRequest(
 *   { headers: { "x-goog-pubsub-message-id": "7", "x-goog-pubsub-publish-time": "2026-01-01T00:00:00Z" } },
 *   Buffer.from('{"po":"4711"}'),
 * );
 * console.log(message.messageId, message.json()); // 7 { po: '4711' }
 * ```
 */
export function parsePushRequest(request: PushRequestHeaders, body: unknown): ParsedMessage {
  return readPushRequest(request, body).message;
}

/** The formats {@link readPushRequest} tells apart, as its reasons name them. */
export type PushFormat =
  | "request"
  | "envelope"
  | "unwrapped"
  | "unwrapped-metadata"
  | "binary"
  | "structured";

/** Each format as the start of a malformed reason names it. */
const FORMAT_LABEL: Readonly<Record<PushFormat, string>> = {
  request: "push request",
  envelope: "Pub/Sub push envelope",
  unwrapped: "unwrapped push without metadata",
  "unwrapped-metadata": "unwrapped push with metadata (x-goog-pubsub-* headers)",
  binary: "CloudEvent in binary mode (ce-* headers)",
  structured: "CloudEvent in structured mode (application/cloudevents+json)",
};

/** Each format as a reason names what the gateway read ("read as …"). */
export const READ_AS: Readonly<Record<PushFormat, string>> = {
  request: "a push request",
  envelope: "a Pub/Sub push envelope",
  unwrapped: "an unwrapped push without metadata",
  "unwrapped-metadata": "an unwrapped push with metadata (x-goog-pubsub-* headers)",
  binary: "a CloudEvent in binary mode (ce-* headers)",
  structured: "a CloudEvent in structured mode (application/cloudevents+json)",
};

const GENERIC_PREFIX = "malformed Pub/Sub message: ";

/**
 * {@link parsePushRequest} with the format it read the request as. A malformed request
 * throws {@link MalformedMessage} whose reason starts by naming the format it was read as
 * (`malformed Pub/Sub push envelope: message.messageId is missing`).
 */
export function readPushRequest(
  request: PushRequestHeaders,
  body: unknown,
): { message: ParsedMessage; format: PushFormat } {
  let format: PushFormat = "request";
  try {
    if (!isObject(request)) fail(`the request is ${shown(request)}`);
    const headers = new RequestHeaders(request);
    const contentType = headers.one("content-type");
    const media = mediaType(contentType);
    if (media === "application/cloudevents+json") {
      format = "structured";
      return { message: structuredCloudEvent(body), format };
    }
    if (media?.startsWith("application/cloudevents")) {
      fail(
        `content-type ${shown(media)} is not read: only application/cloudevents+json and binary mode`,
      );
    }
    if (headers.has("ce-specversion") || headers.has("ce-id")) {
      format = "binary";
      return { message: binaryCloudEvent(headers, contentType, body), format };
    }
    if (isObject(body) && media === "application/x-www-form-urlencoded") {
      // What a form parser made of the data cannot be turned back into it.
      fail(
        "the body was parsed as a form by a body parser; mount the push route without one, or with express.raw()",
      );
    }
    if (headers.has(MESSAGE_ID)) {
      format = "unwrapped-metadata";
      return unwrappedWithMetadata(request, headers, body);
    }
    // No metadata: a body declared JSON must be JSON, or it is no push at all.
    const json = jsonBody(body, declaredJson(media) ? media : undefined);
    if (json !== undefined && Object.hasOwn(json, "message")) {
      format = "envelope";
      return { message: fromEnvelopeObject(json, ""), format };
    }
    format = "unwrapped";
    const message = makeMessage({
      messageId: "",
      data: bodyBytes(body),
      attributes: {},
      publishTime: undefined,
      orderingKey: undefined,
      deliveryAttempt: undefined,
      subscription: undefined,
    });
    return { message, format };
  } catch (error) {
    if (error instanceof MalformedMessage && error.message.startsWith(GENERIC_PREFIX)) {
      const reason = error.message.slice(GENERIC_PREFIX.length);
      throw new MalformedMessage(`malformed ${FORMAT_LABEL[format]}: ${reason}`);
    }
    throw error;
  }
}

/** Whether a media type declares a JSON body (`application/json`, `text/json`, `…+json`). */
function declaredJson(media: string | undefined): media is string {
  return (
    media === "application/json" ||
    media === "text/json" ||
    (media?.endsWith("+json") === true && media.includes("/"))
  );
}

/**
 * The key `idempotentHttp` uses for a parsed message when no `key` option is given: the
 * Pub/Sub messageId, or for a CloudEvent that is not a Pub/Sub message its source and id
 * ({@link cloudEventSourceIdKey}). Undefined when there is none (an unwrapped push without
 * write-metadata): such a message is refused unless a `key` option finds one.
 *
 * @example
 * ```ts
 * import { defaultMessageKey, idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * // Namespace the default key of every format per service.
 * const handler = idempotentHttp(
 *   {
 *     backend: new InMemoryLock(),
 *     key: ({ message }) => {
 *       const key = defaultMessageKey(message);
 *       return key === undefined ? undefined : `billing:${key}`;
 *     },
 *   },
 *   async () => {},
 * );
 * ```
 */
export function defaultMessageKey(message: ParsedMessage): string | undefined {
  const { event } = message;
  if (event !== undefined && event.type !== MESSAGE_PUBLISHED_TYPE) {
    return cloudEventSourceIdKey(event.source, event.id);
  }
  return message.messageId === "" ? undefined : message.messageId;
}

/**
 * Why a parsed push found no default key, for the 400 answer: what the gateway read it as
 * and what was missing. Built only for a refusal.
 */
export function missingKeyReason(message: ParsedMessage, format: PushFormat): string {
  const { event } = message;
  if (event !== undefined) {
    return event.type === MESSAGE_PUBLISHED_TYPE
      ? `read as ${READ_AS[format]}: its data carries no Pub/Sub messageId; give options.key to key it otherwise`
      : `read as ${READ_AS[format]}: its source and id make no key; give options.key to key it otherwise`;
  }
  if (message.messageId !== "") {
    return `read as ${READ_AS[format]}: it has no key; give options.key to key it otherwise`;
  }
  return (
    `read as ${READ_AS[format]} (${message.data.byteLength} bytes): no ${MESSAGE_ID} header ` +
    "and no push envelope { message, subscription }, so no Pub/Sub messageId; turn on " +
    "--push-no-wrapper-write-metadata, or give options.key"
  );
}

/** The longest id or subscription a malformed push's log line repeats. */
const SALVAGED_CHARS = 256;

/**
 * What a log line can still name of a push that could not be parsed: the messageId and
 * subscription from the metadata headers or the envelope, each only when it is text, cut
 * to {@link SALVAGED_CHARS}. Total: a request or body that cannot be read names nothing.
 */
export function salvagedRef(request: PushRequestHeaders, body: unknown): MessageRef {
  try {
    const headers = request.headers;
    const header = (name: string) => capped(isObject(headers) ? headers[name] : undefined);
    const messageId = header(MESSAGE_ID) ?? header("ce-id");
    if (messageId !== undefined) return { messageId, subscription: header(SUBSCRIPTION) };
    const json = isObject(body)
      ? body
      : typeof body === "string" || isBytes(body)
        ? jsonBody(body)
        : undefined;
    if (json === undefined) return {};
    const inner = isObject(json.message) ? json.message : isObject(json.data) ? json.data : {};
    const message = isObject(inner.message) ? inner.message : inner;
    const attempt = json.deliveryAttempt;
    return {
      messageId: capped(message.messageId) ?? capped(message.message_id),
      subscription: capped(json.subscription) ?? capped(inner.subscription),
      deliveryAttempt: Number.isSafeInteger(attempt) ? (attempt as number) : undefined,
    };
  } catch {
    return {};
  }
}

function capped(value: unknown): string | undefined {
  if (typeof value !== "string" || value === "") return undefined;
  return value.length > SALVAGED_CHARS ? `${value.slice(0, SALVAGED_CHARS)}...` : value;
}

/** The most of a JSON.parse error a reason echoes: V8 quotes a few characters of the body. */
const PARSE_ERROR_CHARS = 100;

/**
 * The body as a JSON object when it is one (parsed, or JSON text or bytes); else undefined.
 * With `declared` (the body's JSON media type) a body that is not JSON is refused instead.
 */
function jsonBody(body: unknown, declared?: string): Json | undefined {
  if (isObject(body)) return body;
  let json: string;
  if (typeof body === "string") json = body;
  else if (isBytes(body)) {
    // Undeclared, only bytes that start like an object are decoded: a large binary payload is not.
    if (declared === undefined) {
      const first = body.findIndex((b) => b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d);
      if (body[first] !== 0x7b) return undefined;
    }
    json = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");
  } else if (body === undefined && declared !== undefined) json = "";
  else return undefined;
  if (declared === undefined && !json.trimStart().startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(json);
    return isObject(value) ? value : undefined;
  } catch (error) {
    if (declared === undefined) return undefined;
    const what = `the body is declared ${declared}`;
    if (json.trim() === "") fail(`${what} but is empty; ${ENVELOPE_SHAPE}`);
    const why = error instanceof Error ? error.message : String(error);
    const capped =
      why.length > PARSE_ERROR_CHARS ? `${why.slice(0, PARSE_ERROR_CHARS - 3)}...` : why;
    return fail(`${what} but is not valid JSON (${capped}); ${ENVELOPE_SHAPE}`);
  }
}

const ENVELOPE_SHAPE = "a Pub/Sub push is a JSON envelope { message, subscription }";

/**
 * The body's bytes: as received, a string as UTF-8, or an object a JSON body parser made as
 * its JSON text again (the same JSON, not byte for byte; mount the route without a parser,
 * or with `express.raw()`, where the exact bytes matter).
 */
function bodyBytes(body: unknown): Buffer {
  if (body === undefined) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  if (isBytes(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (typeof body === "string") return Buffer.from(body, "utf8");
  let json: string | undefined;
  try {
    json = JSON.stringify(body);
  } catch {
    json = undefined;
  }
  if (json === undefined) fail(`the request body is ${shown(body)}, not data`);
  return Buffer.from(json, "utf8");
}

/** One metadata header: absent, or non-empty text a key could hold. */
function metadataHeader(headers: RequestHeaders, name: string): string | undefined {
  const value = headers.one(name);
  if (value === undefined) return undefined;
  if (value === "") fail(`the ${name} header is empty`);
  if (Buffer.byteLength(value, "utf8") > MAX_KEY_BYTES) {
    fail(`the ${name} header is over ${MAX_KEY_BYTES} bytes`);
  }
  const flaw = cloudEventStringFlaw(value);
  if (flaw !== undefined) fail(`the ${name} header ${flaw}`);
  return value;
}

/**
 * The attributes of an unwrapped push with metadata: every header of the request but the
 * {@link TRANSPORT_HEADERS}, by its lower-case name. A header sent twice (two attributes
 * whose names differ only in case) has its values joined with `", "`, as node:http does.
 */
function headerAttributes(request: PushRequestHeaders): Record<string, string> {
  const attributes: Record<string, string> = {};
  const { headers } = request;
  if (headers === undefined || headers === null) return attributes;
  for (const name of Object.keys(headers)) {
    const lower = name.toLowerCase();
    if (isTransportHeader(lower)) continue;
    const raw = headers[name];
    if (raw === undefined) continue;
    const values = (Array.isArray(raw) ? raw : [raw]).map((one) => headerText(lower, one));
    const seen = Object.hasOwn(attributes, lower) ? attributes[lower] : undefined;
    const value = seen === undefined ? values.join(", ") : [seen, ...values].join(", ");
    // Assigned, except `__proto__`, which assignment would drop: that one is defined.
    if (lower === "__proto__") {
      Object.defineProperty(attributes, lower, { value, enumerable: true, writable: true });
    } else attributes[lower] = value;
  }
  return attributes;
}

function unwrappedWithMetadata(
  request: PushRequestHeaders,
  headers: RequestHeaders,
  body: unknown,
): { message: ParsedMessage; format: PushFormat } {
  const messageId = metadataHeader(headers, MESSAGE_ID) as string;
  const subscription = metadataHeader(headers, SUBSCRIPTION);
  const publishTime = metadataHeader(headers, PUBLISH_TIME);
  if (publishTime !== undefined && !isTimestamp(publishTime)) {
    fail(`the ${PUBLISH_TIME} header is not a timestamp: ${shown(publishTime)}`);
  }
  const orderingKey = metadataHeader(headers, ORDERING_KEY);
  const emulatorOrderingKey = metadataHeader(headers, EMULATOR_ORDERING_KEY);
  if (
    orderingKey !== undefined &&
    emulatorOrderingKey !== undefined &&
    orderingKey !== emulatorOrderingKey
  ) {
    fail(`the ${ORDERING_KEY} and ${EMULATOR_ORDERING_KEY} headers disagree`);
  }
  // Pub/Sub sends no metadata headers with a wrapped push; should a proxy add them, a push
  // body of this very messageId is still read as one. A payload cannot know its messageId
  // in advance, so this never lets a payload choose how it is read.
  const json = jsonBody(body);
  if (json !== undefined && isObject(json.message)) {
    const { messageId: camel, message_id: snake } = json.message;
    if (camel === messageId || (camel === undefined && snake === messageId)) {
      return { message: fromEnvelopeObject(json, ""), format: "envelope" };
    }
  }
  const message = makeMessage({
    messageId,
    data: bodyBytes(body),
    // The attributes arrive as headers of their own names, lower-cased, among the headers
    // the transport adds: everything but those (TRANSPORT_HEADERS) is an attribute.
    attributes: headerAttributes(request),
    publishTime,
    orderingKey: orderingKey ?? emulatorOrderingKey,
    deliveryAttempt: undefined,
    subscription,
  });
  return { message, format: "unwrapped-metadata" };
}

/** A `ce-*` header value: percent-encoded text (CloudEvents HTTP binding 1.0, 3.1.3.2). */
function percentDecoded(name: string, value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return fail(`the ${name} header is not valid percent-encoding: ${shown(value)}`);
  }
}

function binaryCloudEvent(
  headers: RequestHeaders,
  contentType: string | undefined,
  body: unknown,
): ParsedMessage {
  const attributes = new Map<string, string>();
  for (const name of headers.named("ce-")) {
    const attribute = name.slice(3);
    if (!ATTRIBUTE_NAME.test(attribute)) {
      fail(`the ${name} header names no CloudEvent attribute (lower-case letters and digits)`);
    }
    attributes.set(attribute, percentDecoded(name, headers.one(name) as string));
  }
  // In binary mode the content-type header is the datacontenttype attribute.
  if (contentType !== undefined) attributes.set("datacontenttype", contentType);
  const event = checkedAttributes(attributes, (name) =>
    name === "datacontenttype" ? "content-type header" : `ce-${name} header`,
  );
  if (event.type === MESSAGE_PUBLISHED_TYPE) {
    const envelope = isObject(body) ? body : jsonObject(bodyBytes(body), "the CloudEvent data");
    return fromEnvelopeObject(envelope, "data.", event);
  }
  return eventMessage(event, bodyBytes(body));
}

function structuredCloudEvent(body: unknown): ParsedMessage {
  const object = jsonObject(body ?? "", "the CloudEvent");
  const attributes = new Map<string, string>();
  for (const name of Object.keys(object)) {
    if (name === "data" || name === "data_base64") continue;
    if (!ATTRIBUTE_NAME.test(name)) {
      fail(
        `the CloudEvent member ${shown(name)} names no attribute (lower-case letters and digits)`,
      );
    }
    const value = object[name];
    // The JSON format lets an attribute be a string, a number or a boolean; null is absent.
    if (value === null) continue;
    if (typeof value === "string") attributes.set(name, value);
    else if (
      typeof value === "boolean" ||
      (typeof value === "number" && Number.isSafeInteger(value))
    ) {
      attributes.set(name, String(value));
    } else fail(`the CloudEvent attribute ${name} is ${shown(value)}, not a string`);
  }
  const event = checkedAttributes(attributes, (name) => `attribute ${name}`);
  const { data, data_base64: base64 } = object;
  if (data !== undefined && base64 !== undefined) {
    fail("the CloudEvent has both data and data_base64");
  }
  if (event.type === MESSAGE_PUBLISHED_TYPE) {
    if (data === undefined && base64 === undefined) fail("the CloudEvent has no data");
    const source = base64 !== undefined ? decodeBase64(base64, "the CloudEvent data_base64") : data;
    return fromEnvelopeObject(jsonObject(source, "the CloudEvent data"), "data.", event);
  }
  let bytes: Buffer;
  if (base64 !== undefined) bytes = decodeBase64(base64, "the CloudEvent data_base64");
  else if (data === undefined || data === null) bytes = Buffer.alloc(0);
  else if (typeof data === "string" && !isJsonMedia(event.datacontenttype)) {
    bytes = Buffer.from(data, "utf8");
  } else bytes = Buffer.from(JSON.stringify(data), "utf8"); // JSON data is the JSON value itself
  return eventMessage(event, bytes);
}

/** Whether data of this media type is carried as a JSON value (JSON event format 1.0, 3.1). */
function isJsonMedia(datacontenttype: string | undefined): boolean {
  const media = mediaType(datacontenttype);
  return (
    media === undefined ||
    media === "application/json" ||
    media === "text/json" ||
    (media.endsWith("+json") && media.includes("/"))
  );
}

/** A CloudEvent that is not a Pub/Sub message: no messageId, the data as it came. */
function eventMessage(event: CloudEventAttributes, data: Buffer): ParsedMessage {
  return makeMessage({
    messageId: "",
    data,
    attributes: {},
    publishTime: undefined,
    orderingKey: undefined,
    deliveryAttempt: undefined,
    subscription: undefined,
    event,
  });
}
