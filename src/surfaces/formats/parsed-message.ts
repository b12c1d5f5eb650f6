// Reading a Pub/Sub message out of whichever envelope carried it: a push body, a CloudEvent
// or a pull Message, into one ParsedMessage. One piece although it is over 350 lines: the
// three parsers share every field reader (data, attributes, ids, deliveryAttempt) and the
// reason texts, so a field is checked the same way whichever way it came. The HTTP push
// formats (push-formats.ts) reuse those readers through the internal exports below.
import { Buffer } from "node:buffer";
import { MalformedMessage } from "../../core/errors.js";

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

/**
 * The CloudEvent type Pub/Sub (through Eventarc or functions-framework) delivers;
 * {@link parseCloudEvent} refuses any other type.
 *
 * @example
 * ```ts
 * import { MESSAGE_PUBLISHED_TYPE, type CloudEventLike } from "gcp-pubsub-idempotency";
 *
 * const isPubSub = (event: CloudEventLike) => event.type === MESSAGE_PUBLISHED_TYPE;
 * ```
 */
export const MESSAGE_PUBLISHED_TYPE = "google.cloud.pubsub.topic.v1.messagePublished";

/**
 * One Pub/Sub message, whichever envelope it arrived in: what the `parse*` functions
 * return and what {@link idempotentHttp} hands its handler. Frozen.
 *
 * @example
 * ```ts
 * import { type ParsedMessage, parsePushBody } from "gcp-pubsub-idempotency";
 *
 * const data = Buffer.from(JSON.stringify({ po: "4711" })).toString("base64");
 * const message: ParsedMessage = parsePushBody({ message: { messageId: "1", data } });
 * const order = message.json<{ po: string }>(); // { po: "4711" }
 * ```
 */
export interface ParsedMessage {
  /**
   * The Pub/Sub message id: the default idempotency key. `""` when the delivery carried none:
   * an unwrapped push without write-metadata, or a CloudEvent that is not a Pub/Sub message
   * (its identity is `event.source` with `event.id`).
   */
  readonly messageId: string;
  /** The decoded payload (empty when the message carried attributes only). */
  readonly data: Buffer;
  /** The message attributes; empty when it had none. */
  readonly attributes: Readonly<Record<string, string>>;
  /** RFC 3339 string from a push body or CloudEvent; a Date from a pull `Message`. */
  readonly publishTime?: Date | string;
  /** Present only when the message was published with a non-empty ordering key. */
  readonly orderingKey?: string;
  /** Present only with a dead-letter policy (and never from the emulator). */
  readonly deliveryAttempt?: number;
  /** Absent when functions-framework converted a raw push body into a CloudEvent. */
  readonly subscription?: string;
  /**
   * The CloudEvent's attributes when the message came as a CloudEvent over HTTP (binary or
   * structured mode); `data` is then the event's data.
   */
  readonly event?: CloudEventAttributes;
  /** The payload as UTF-8 text. */
  text(): string;
  /** The payload parsed as JSON; throws MalformedMessage when it is not JSON. */
  json<T = unknown>(): T;
}

/**
 * {@link ParsedMessage} under the name the design fixes for what {@link idempotentHttp} hands its
 * handler; the same type, kept so both names keep working.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock, type PushMessage } from "gcp-pubsub-idempotency";
 *
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, async (message: PushMessage) => {
 *   console.log(message.messageId);
 * });
 * ```
 */
export type PushMessage = ParsedMessage;

/**
 * The smallest CloudEvent shape the gateway reads; functions-framework's `CloudEvent` fits it.
 *
 * @example
 * ```ts
 * import { cloudEventMessageId, type CloudEventLike } from "gcp-pubsub-idempotency";
 *
 * const event: CloudEventLike = {
 *   id: "1",
 *   type: "google.cloud.pubsub.topic.v1.messagePublished",
 *   data: { message: { messageId: "1", data: "" } },
 * };
 * cloudEventMessageId(event); // "1"
 * ```
 */
export interface CloudEventLike {
  /**
   * The CloudEvent id. For a Pub/Sub event the gateway keys on the messageId in `data`; for
   * any other type on `source` with `id`.
   */
  readonly id?: string;
  /** Who produced the event; with `id`, the key of an event that is not a Pub/Sub message. */
  readonly source?: string;
  /** {@link MESSAGE_PUBLISHED_TYPE} for a Pub/Sub message; any other type is keyed by source and id. */
  readonly type?: string;
  /** For a Pub/Sub event `{ message, subscription }`, as an object, a JSON string or JSON bytes. */
  readonly data?: unknown;
}

/**
 * The smallest `@google-cloud/pubsub` `Message` shape the gateway reads and settles; a real
 * `Message` and the testing `fakeMessage()` both fit it.
 *
 * @example
 * ```ts
 * import { parsePubSubMessage, type PubSubMessageLike } from "gcp-pubsub-idempotency";
 *
 * const message: PubSubMessageLike = { id: "1", data: Buffer.from("hi"), ack() {}, nack() {} };
 * parsePubSubMessage(message).text(); // "hi"
 * ```
 */
export interface PubSubMessageLike {
  /** The message id: the default idempotency key. */
  readonly id: string;
  /** The payload; a string is read as UTF-8. */
  readonly data?: Buffer | Uint8Array | string;
  /** The message attributes. */
  readonly attributes?: Readonly<Record<string, string>>;
  /** When Pub/Sub accepted the message. */
  readonly publishTime?: Date;
  /** The ordering key, when the message was published with one. */
  readonly orderingKey?: string;
  /** Present only with a dead-letter policy. */
  readonly deliveryAttempt?: number;
  /** Settle the message: Pub/Sub will not redeliver it. */
  ack(): void;
  /** Give the message back for redelivery (at once, unless the subscription has a retry policy). */
  nack(): void;
}

/** A JSON object as parsed: string keys, unknown values. */
export type Json = Record<string, unknown>;

export const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === "object" && !Array.isArray(value) && !isBytes(value);

export const isBytes = (value: unknown): value is Uint8Array => value instanceof Uint8Array;

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
export function isBase64(text: string): boolean {
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

export function fail(reason: string): never {
  throw new MalformedMessage(`malformed Pub/Sub message: ${reason}`);
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

export function decodeBase64(data: unknown, where = "message.data"): Buffer {
  if (data === undefined || data === null) return Buffer.alloc(0);
  if (typeof data !== "string") fail(`${where} must be a base64 string, got ${shown(data)}`);
  // Buffer.from(…, "base64") silently skips bad characters; check the alphabet first.
  if (!isBase64(data)) fail(`${where} is not valid base64`);
  return Buffer.from(data, "base64");
}

/**
 * Whether `text` is a timestamp `Date.parse` reads. The RFC 3339 UTC form Pub/Sub writes
 * (2026-12-03T18:53:25.123456789Z) is recognised by a pattern that accepts nothing `Date.parse`
 * refuses, at a quarter of its cost; any other spelling is left to `Date.parse`.
 */
export function isTimestamp(text: string): boolean {
  return PUBSUB_TIME.test(text) || !Number.isNaN(Date.parse(text));
}
const PUBSUB_TIME =
  /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?Z$/;

function stringField(owner: Json, name: string, where: string): string | undefined {
  const value = owner[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") fail(`${where}${name} must be a string, got ${shown(value)}`);
  return value;
}

function attributesOf(value: unknown, where: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) fail(`${where}attributes must be an object, got ${shown(value)}`);
  const out: Record<string, string> = {};
  // Names, then values: no [name, value] pair allocated per attribute.
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

function deliveryAttemptOf(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    fail(`deliveryAttempt must be a non-negative integer, got ${shown(value)}`);
  }
  return value;
}

/** Assemble a frozen {@link ParsedMessage}; every parser ends here. */
export function makeMessage(fields: {
  messageId: string;
  data: Buffer;
  attributes: Record<string, string>;
  publishTime: Date | string | undefined;
  orderingKey: string | undefined;
  deliveryAttempt: number | undefined;
  subscription: string | undefined;
  event?: CloudEventAttributes | undefined;
}): ParsedMessage {
  const { data, event } = fields;
  const message: Mutable<ParsedMessage> = {
    messageId: fields.messageId,
    data,
    attributes: Object.freeze(fields.attributes),
    text: () => data.toString("utf8"),
    json: <T>() => {
      try {
        return JSON.parse(data.toString("utf8")) as T;
      } catch (error) {
        throw new MalformedMessage(
          `${messageLabel(fields.messageId, event)}: data is not JSON (${error instanceof Error ? error.message : String(error)})`,
        );
      }
    },
  };
  // Optional fields are left out, not set to undefined (exactOptionalPropertyTypes); set one
  // by one rather than spread from temporary objects, which every push would allocate.
  if (fields.publishTime !== undefined) message.publishTime = fields.publishTime;
  if (fields.orderingKey) message.orderingKey = fields.orderingKey;
  if (fields.deliveryAttempt !== undefined) message.deliveryAttempt = fields.deliveryAttempt;
  if (fields.subscription !== undefined) message.subscription = fields.subscription;
  if (event !== undefined) message.event = event;
  return Object.freeze(message);
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** How an error names the message: built only when a message's data turns out not to be JSON. */
function messageLabel(messageId: string, event: CloudEventAttributes | undefined): string {
  if (messageId !== "") return `message ${messageId}`;
  return event !== undefined ? `event ${event.id}` : "the message";
}

/** Parse the `{message, subscription?, deliveryAttempt?}` object common to push and CloudEvent. */
export function fromEnvelopeObject(
  envelope: Json,
  where: string,
  event?: CloudEventAttributes,
): ParsedMessage {
  const raw = envelope.message;
  if (raw === undefined) fail(`${where}has no "message" field`);
  if (!isObject(raw)) fail(`${where}message must be an object, got ${shown(raw)}`);
  const m = `${where}message.`;
  const camel = stringField(raw, "messageId", m);
  const snake = stringField(raw, "message_id", m);
  if (camel !== undefined && snake !== undefined && camel !== snake) {
    fail(`${m}messageId and ${m}message_id disagree`);
  }
  const messageId = camel ?? snake;
  if (messageId === undefined) fail(`${m}messageId is missing`);
  if (messageId === "") fail(`${m}messageId is empty`);
  const publishTime = stringField(raw, "publishTime", m) ?? stringField(raw, "publish_time", m);
  if (publishTime !== undefined && !isTimestamp(publishTime)) {
    fail(`${m}publishTime is not a timestamp: ${shown(publishTime)}`);
  }
  return makeMessage({
    messageId,
    data: decodeBase64(raw.data),
    attributes: attributesOf(raw.attributes, m),
    publishTime,
    orderingKey: stringField(raw, "orderingKey", m) ?? stringField(raw, "ordering_key", m),
    deliveryAttempt: deliveryAttemptOf(envelope.deliveryAttempt ?? envelope.delivery_attempt),
    subscription: stringField(envelope, "subscription", where),
    event,
  });
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

/**
 * Parse a raw push request body: `{message: {data, attributes, messageId, publishTime,
 * orderingKey}, subscription, deliveryAttempt}`, as an object, a JSON string or bytes.
 * Throws {@link MalformedMessage} with a one-line reason.
 *
 * @example
 * ```ts
 * import { parsePushBody } from "gcp-pubsub-idempotency";
 *
 * const raw = '{"message":{"messageId":"1","data":"aGk="},"subscription":"projects/p/subscriptions/s"}';
 * const message = parsePushBody(raw);
 * console.log(message.messageId, message.text()); // 1 hi
 * ```
 */
export function parsePushBody(body: unknown): ParsedMessage {
  if (body === undefined || body === null) fail("the push body is empty");
  return fromEnvelopeObject(jsonObject(body, "the push body"), "");
}

/**
 * Parse a `google.cloud.pubsub.topic.v1.messagePublished` CloudEvent, structured or
 * binary, as functions-framework hands it to a `cloudEvent` function (`event.data` is
 * `{message, subscription}`). Throws {@link MalformedMessage}.
 *
 * @example
 * ```ts
 * import { parseCloudEvent } from "gcp-pubsub-idempotency";
 *
 * const message = parseCloudEvent({
 *   type: "google.cloud.pubsub.topic.v1.messagePublished",
 *   data: { message: { messageId: "1", data: "eyJwbyI6IjQ3MTEifQ==" } },
 * });
 * message.json(); // { po: "4711" }
 * ```
 */
export function parseCloudEvent(event: unknown): ParsedMessage {
  if (!isObject(event)) fail(`the CloudEvent must be an object, got ${shown(event)}`);
  const { type } = event;
  if (type !== undefined && type !== MESSAGE_PUBLISHED_TYPE) {
    fail(`CloudEvent type ${shown(type)} is not ${MESSAGE_PUBLISHED_TYPE}`);
  }
  if (event.data === undefined || event.data === null) fail("the CloudEvent has no data");
  return fromEnvelopeObject(jsonObject(event.data, "the CloudEvent data"), "data.");
}

/**
 * Read an `@google-cloud/pubsub` pull `Message` as a {@link ParsedMessage}. Throws
 * {@link MalformedMessage} when it has no id or its data is not bytes.
 *
 * @example
 * ```ts
 * import { Buffer } from "node:buffer";
 * import { parsePubSubMessage } from "gcp-pubsub-idempotency";
 *
 * const pulled = { id: "1", data: Buffer.from('{"po":"4711"}'), ack() {}, nack() {} };
 * parsePubSubMessage(pulled).json(); // { po: "4711" }
 * ```
 */
export function parsePubSubMessage(message: PubSubMessageLike): ParsedMessage {
  if (!isObject(message)) fail(`the message must be an object, got ${shown(message)}`);
  if (typeof message.id !== "string" || message.id === "") {
    fail(`message.id must be a non-empty string, got ${shown(message.id)}`);
  }
  const { data } = message;
  let bytes: Buffer;
  if (data === undefined || data === null) bytes = Buffer.alloc(0);
  else if (Buffer.isBuffer(data)) bytes = data;
  else if (isBytes(data)) bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  else if (typeof data === "string") bytes = Buffer.from(data, "utf8");
  else fail(`message.data must be bytes, got ${shown(data)}`);
  const { publishTime } = message;
  return makeMessage({
    messageId: message.id,
    data: bytes,
    attributes: attributesOf(message.attributes, "message."),
    publishTime: publishTime instanceof Date ? publishTime : undefined,
    orderingKey: typeof message.orderingKey === "string" ? message.orderingKey : undefined,
    deliveryAttempt: deliveryAttemptOf(message.deliveryAttempt),
    subscription: undefined,
  });
}

/** True for something shaped like a pull `Message` (has `ack` and `nack`). */
function isPullMessage(input: unknown): input is PubSubMessageLike {
  return isObject(input) && typeof input.ack === "function" && typeof input.nack === "function";
}

/**
 * Parse whichever of the three shapes `input` is: a pull `Message`, a CloudEvent (has
 * `specversion` or a `type`), or a raw push body (object, JSON string or bytes).
 * Throws {@link MalformedMessage}.
 *
 * @example
 * ```ts
 * import { parseEnvelope } from "gcp-pubsub-idempotency";
 *
 * declare const input: unknown; // a push body, a CloudEvent or a pull Message
 * const { messageId, attributes } = parseEnvelope(input);
 * ```
 */
export function parseEnvelope(input: unknown): ParsedMessage {
  if (isPullMessage(input)) return parsePubSubMessage(input);
  if (isObject(input) && ("specversion" in input || typeof input.type === "string")) {
    return parseCloudEvent(input);
  }
  return parsePushBody(input);
}

/**
 * The messageId of a CloudEvent without validating the rest, for the default key:
 * a message the handler can still read should not be refused for a bad attribute.
 * Undefined when the event carries none.
 *
 * @example
 * ```ts
 * import { cloudEventMessageId, idempotent, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * // Namespace the default key per service; no id stays undefined (refused, fail closed).
 * const key = (event: unknown) => {
 *   const id = cloudEventMessageId(event);
 *   return id === undefined ? undefined : `orders:${id}`;
 * };
 * const handler = idempotent({ backend: new InMemoryLock(), key }, async () => {});
 * ```
 */
export function cloudEventMessageId(event: unknown): string | undefined {
  const message = cloudEventMessage(event);
  const id = message?.messageId ?? message?.message_id;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/** The deliveryAttempt of a CloudEvent when present and an integer, for log lines. */
export function cloudEventDeliveryAttempt(event: unknown): number | undefined {
  try {
    if (!isObject(event) || !isObject(event.data)) return undefined;
    const attempt = event.data.deliveryAttempt;
    return typeof attempt === "number" && Number.isInteger(attempt) ? attempt : undefined;
  } catch {
    return undefined; // only for a log line: an unreadable event is not refused for it
  }
}

function cloudEventMessage(event: unknown): Json | undefined {
  if (!isObject(event)) return undefined;
  let { data } = event;
  if (typeof data === "string" || isBytes(data)) {
    try {
      data = JSON.parse(isBytes(data) ? Buffer.from(data).toString("utf8") : data);
    } catch {
      return undefined;
    }
  }
  if (!isObject(data) || !isObject(data.message)) return undefined;
  return data.message;
}
