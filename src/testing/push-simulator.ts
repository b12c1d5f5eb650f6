import { Buffer } from "node:buffer";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { InvalidConfiguration } from "../core/errors.js";
import { MESSAGE_PUBLISHED_TYPE } from "../surfaces/envelope.js";
import { parsePushRequest } from "../surfaces/push-formats.js";
import type { createTestIdentity } from "./push-auth.js";

/**
 * A message payload for the builders below: bytes and strings go as they are, anything
 * else as JSON.
 *
 * @example
 * ```ts
 * import { type Payload, pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const payloads: Payload[] = [{ po: "4711" }, "plain text", Buffer.from([1, 2, 3])];
 * const bodies = payloads.map((payload) => pushBody(payload));
 * ```
 */
export type Payload = Buffer | Uint8Array | string | number | boolean | object | null;

/**
 * Envelope fields for the builders below; each has a realistic default.
 *
 * @example
 * ```ts
 * import { type MessageFields, pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const fields: MessageFields = { messageId: "42", attributes: { orderId: "4711" }, deliveryAttempt: 3 };
 * const body = pushBody({ po: "4711" }, fields);
 * ```
 */
export interface MessageFields {
  /** Default: a fresh id from {@link nextMessageId}. */
  messageId?: string;
  /** Default: none. */
  attributes?: Record<string, string>;
  /** RFC 3339 time; default now. */
  publishTime?: string;
  /** Default: none. */
  orderingKey?: string;
  /** Default `projects/test-project/subscriptions/test-sub` (not used by `fakeMessage`). */
  subscription?: string;
  /** Default: left out, as without a dead-letter policy. */
  deliveryAttempt?: number;
  /** Also send `message_id`/`publish_time`, as the real service and the emulator do. */
  snakeCase?: boolean;
}

let counter = 0;
/**
 * A fresh message id; numeric-looking like the service's, unique within the process.
 *
 * @example
 * ```ts
 * import { nextMessageId, pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const messageId = nextMessageId();
 * const first = pushBody("hi", { messageId });
 * const redelivery = pushBody("hi", { messageId }); // same id: a duplicate
 * ```
 */
export function nextMessageId(): string {
  counter += 1;
  return `${Date.now()}${String(counter).padStart(6, "0")}`;
}

/**
 * The bytes a {@link Payload} is sent as: bytes as they are, a string as UTF-8, anything
 * else as its JSON text.
 *
 * @example
 * ```ts
 * import { payloadBytes } from "gcp-pubsub-idempotency/testing";
 *
 * payloadBytes({ po: "4711" }).toString(); // '{"po":"4711"}'
 * ```
 */
export function payloadBytes(payload: Payload): Buffer {
  if (Buffer.isBuffer(payload)) return payload;
  if (payload instanceof Uint8Array) return Buffer.from(payload);
  if (typeof payload === "string") return Buffer.from(payload, "utf8");
  return Buffer.from(JSON.stringify(payload), "utf8");
}

const DEFAULT_SUBSCRIPTION = "projects/test-project/subscriptions/test-sub";
const DEFAULT_TOPIC = "projects/test-project/topics/test-topic";

// The builders' results are type aliases, not interfaces: like the object literals they
// describe, they stay assignable to index-signature types (functions-framework's CloudEvent).

/**
 * The `message` object of a push body, as {@link pushBody} builds it.
 *
 * @example
 * ```ts
 * import { type PushBodyMessage, pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const message: PushBodyMessage = pushBody("hi", { snakeCase: true }).message;
 * console.log(message.data, message.message_id === message.messageId); // aGk= true
 * ```
 */
export type PushBodyMessage = {
  /** The payload, base64. */
  data: string;
  /** The attributes; `{}` when none were given. */
  attributes: Record<string, string>;
  /** The message id. */
  messageId: string;
  /** RFC 3339 time. */
  publishTime: string;
  /** The same as `messageId`; only with `snakeCase`. */
  message_id?: string;
  /** The same as `publishTime`; only with `snakeCase`. */
  publish_time?: string;
  /** Only when given. */
  orderingKey?: string;
};

/**
 * A raw push request body, as {@link pushBody} builds it and a push subscription POSTs it.
 *
 * @example
 * ```ts
 * import { parsePushBody } from "gcp-pubsub-idempotency";
 * import { type PushBody, pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const body: PushBody = pushBody({ po: "4711" }, { deliveryAttempt: 2 });
 * parsePushBody(body).deliveryAttempt; // 2
 * ```
 */
export type PushBody = {
  /** The message itself. */
  message: PushBodyMessage;
  /** The subscription's full name. */
  subscription: string;
  /** Only when given (a dead-letter policy sends it). */
  deliveryAttempt?: number;
};

function messageObject(
  payload: Payload,
  fields: MessageFields,
  messageId: string,
): PushBodyMessage {
  const publishTime = fields.publishTime ?? new Date().toISOString();
  return {
    data: payloadBytes(payload).toString("base64"),
    attributes: fields.attributes ?? {},
    messageId,
    publishTime,
    ...(fields.snakeCase ? { message_id: messageId, publish_time: publishTime } : {}),
    ...(fields.orderingKey === undefined ? {} : { orderingKey: fields.orderingKey }),
  };
}

/**
 * A raw push request body, as a push subscription POSTs it.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, async () => {});
 * const res = { statusCode: 0, end() {} };
 * await handler({ body: pushBody({ po: "4711" }) }, res);
 * console.log(res.statusCode); // 204
 * ```
 */
export function pushBody(payload: Payload, fields: MessageFields = {}): PushBody {
  const messageId = fields.messageId ?? nextMessageId();
  return {
    message: messageObject(payload, fields, messageId),
    subscription: fields.subscription ?? DEFAULT_SUBSCRIPTION,
    ...(fields.deliveryAttempt === undefined ? {} : { deliveryAttempt: fields.deliveryAttempt }),
  };
}

/**
 * A structured-mode `messagePublished` CloudEvent, as {@link structuredCloudEvent} builds it.
 *
 * @example
 * ```ts
 * import { type StructuredCloudEvent, structuredCloudEvent } from "gcp-pubsub-idempotency/testing";
 *
 * const event: StructuredCloudEvent = structuredCloudEvent("hi", { messageId: "7" });
 * console.log(event.id, event.data.message.messageId); // 7 7
 * ```
 */
export type StructuredCloudEvent = {
  /** Always `1.0`. */
  specversion: string;
  /** The message id. */
  id: string;
  /** Always `google.cloud.pubsub.topic.v1.messagePublished`. */
  type: string;
  /** The topic, `//pubsub.googleapis.com/projects/test-project/topics/test-topic`. */
  source: string;
  /** The publish time. */
  time: string;
  /** Always `application/json`. */
  datacontenttype: string;
  /** The push body. */
  data: PushBody;
};

/**
 * A structured-mode `messagePublished` CloudEvent (the JSON body of the request), as
 * functions-framework hands it to a `cloudEvent` function.
 *
 * @example
 * ```ts
 * import { idempotent, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { structuredCloudEvent } from "gcp-pubsub-idempotency/testing";
 *
 * const handler = idempotent({ backend: new InMemoryLock() }, async () => console.log("once"));
 * const event = structuredCloudEvent({ po: "4711" });
 * await handler(event);
 * await handler(event); // a duplicate: skipped, resolves
 * ```
 */
export function structuredCloudEvent(
  payload: Payload,
  fields: MessageFields = {},
): StructuredCloudEvent {
  const messageId = fields.messageId ?? nextMessageId();
  const body = pushBody(payload, { ...fields, messageId });
  return {
    specversion: "1.0",
    id: messageId,
    type: MESSAGE_PUBLISHED_TYPE,
    source: `//pubsub.googleapis.com/${DEFAULT_TOPIC}`,
    time: body.message.publishTime,
    datacontenttype: "application/json",
    data: body,
  };
}

/**
 * A binary-mode CloudEvent request, as {@link binaryCloudEvent} builds it.
 *
 * @example
 * ```ts
 * import { type BinaryCloudEvent, binaryCloudEvent } from "gcp-pubsub-idempotency/testing";
 *
 * const { headers, body }: BinaryCloudEvent = binaryCloudEvent("hi");
 * console.log(headers["ce-id"] === body.message.messageId); // true
 * ```
 */
export type BinaryCloudEvent = {
  /** `content-type` and the `ce-*` attributes of the event. */
  headers: {
    /** Always `application/json`. */
    "content-type": string;
    /** The event's `specversion`. */
    "ce-specversion": string;
    /** The event's `id`: the message id. */
    "ce-id": string;
    /** The event's `type`. */
    "ce-type": string;
    /** The event's `source`: the topic. */
    "ce-source": string;
    /** The event's `time`: the publish time. */
    "ce-time": string;
  };
  /** The push body, sent as the request body. */
  body: PushBody;
};

/**
 * A binary-mode `messagePublished` CloudEvent: `ce-*` headers and the data as the body.
 * POST it to a functions-framework server to test a `cloudEvent` function over HTTP.
 *
 * @example
 * ```ts
 * import { binaryCloudEvent } from "gcp-pubsub-idempotency/testing";
 *
 * const { headers, body } = binaryCloudEvent({ po: "4711" });
 * await fetch("http://127.0.0.1:8080/", { method: "POST", headers, body: JSON.stringify(body) });
 * ```
 */
export function binaryCloudEvent(payload: Payload, fields: MessageFields = {}): BinaryCloudEvent {
  const event = structuredCloudEvent(payload, fields);
  return {
    headers: {
      "content-type": "application/json",
      "ce-specversion": event.specversion,
      "ce-id": event.id,
      "ce-type": event.type,
      "ce-source": event.source,
      "ce-time": event.time,
    },
    body: event.data,
  };
}

/**
 * How a push reaches the endpoint, for {@link pushRequest} and {@link simulatePushDeliveries}:
 * a wrapped push (the default push body), an unwrapped push (`--push-no-wrapper`) without or
 * with metadata headers (`--push-no-wrapper-write-metadata`), or a `messagePublished`
 * CloudEvent from Eventarc in binary or structured mode.
 *
 * @example
 * ```ts
 * import { type PushFormat, pushRequest } from "gcp-pubsub-idempotency/testing";
 *
 * const formats: PushFormat[] = ["wrapped", "unwrapped-with-metadata", "cloudevent-binary"];
 * const requests = formats.map((format) => pushRequest({ po: "4711" }, { messageId: "1" }, format));
 * ```
 */
export type PushFormat =
  | "wrapped"
  | "unwrapped"
  | "unwrapped-with-metadata"
  | "cloudevent-binary"
  | "cloudevent-structured";

/**
 * One HTTP request as a push sends it: the headers and the exact body bytes.
 *
 * @example
 * ```ts
 * import { type PushHttpRequest, pushRequest } from "gcp-pubsub-idempotency/testing";
 *
 * const { headers, body }: PushHttpRequest = pushRequest("hi", {}, "unwrapped-with-metadata");
 * await fetch("http://127.0.0.1:8080/", { method: "POST", headers, body });
 * ```
 */
export type PushHttpRequest = {
  /** Header names in lower case; values as sent (UTF-8 bytes one character per byte). */
  headers: Record<string, string>;
  /** The body bytes. */
  body: Buffer;
};

/** A header token (RFC 9110): what a header name may be. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** UTF-8 bytes as a header value, one character per byte, as node:http reads them back. */
const headerBytes = (value: string) => Buffer.from(value, "utf8").toString("latin1");

/**
 * The HTTP request a push subscription of the given {@link PushFormat} sends for one message.
 * With `unwrapped-with-metadata` the metadata goes in `x-goog-pubsub-subscription-name`,
 * `x-goog-pubsub-message-id`, `x-goog-pubsub-publish-time` and `x-goog-pubsub-ordering-key`,
 * and each attribute in a header of its own name (a name that is no header token is refused);
 * plain `unwrapped` sends the data alone. Unwrapped bodies are the payload bytes, with no
 * content-type unless an attribute names one.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { pushRequest } from "gcp-pubsub-idempotency/testing";
 *
 * const seen: string[] = [];
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, (m) => void seen.push(m.messageId));
 * const { headers, body } = pushRequest({ po: "4711" }, { messageId: "42" }, "unwrapped-with-metadata");
 * await handler({ headers, body }, { statusCode: 0, end() {} });
 * console.log(seen); // ["42"]
 * ```
 */
export function pushRequest(
  payload: Payload,
  fields: MessageFields = {},
  format: PushFormat = "wrapped",
): PushHttpRequest {
  const messageId = fields.messageId ?? nextMessageId();
  const withId = { ...fields, messageId };
  switch (format) {
    case "wrapped":
      return jsonRequest("application/json", pushBody(payload, withId));
    case "cloudevent-structured":
      return jsonRequest("application/cloudevents+json", structuredCloudEvent(payload, withId));
    case "cloudevent-binary": {
      const { headers, body } = binaryCloudEvent(payload, withId);
      return jsonRequest("application/json", body, headers);
    }
    case "unwrapped":
      return { headers: {}, body: payloadBytes(payload) };
    case "unwrapped-with-metadata":
      return { headers: metadataHeaders(withId, messageId), body: payloadBytes(payload) };
    default:
      throw new InvalidConfiguration(`pushRequest: unknown format ${JSON.stringify(format)}`);
  }
}

function jsonRequest(
  contentType: string,
  value: unknown,
  headers: Record<string, string> = {},
): PushHttpRequest {
  return {
    headers: { ...headers, "content-type": contentType },
    body: Buffer.from(JSON.stringify(value), "utf8"),
  };
}

function metadataHeaders(fields: MessageFields, messageId: string): Record<string, string> {
  const headers: Record<string, string> = {};
  // Attributes first, so that one named like a metadata header cannot replace it.
  for (const [name, value] of Object.entries(fields.attributes ?? {})) {
    if (!HEADER_NAME.test(name)) {
      throw new InvalidConfiguration(
        `pushRequest: the attribute name ${JSON.stringify(name)} cannot be sent as a header`,
      );
    }
    headers[name.toLowerCase()] = headerBytes(value);
  }
  headers["x-goog-pubsub-subscription-name"] = fields.subscription ?? DEFAULT_SUBSCRIPTION;
  headers["x-goog-pubsub-message-id"] = messageId;
  headers["x-goog-pubsub-publish-time"] = fields.publishTime ?? new Date().toISOString();
  if (fields.orderingKey) headers["x-goog-pubsub-ordering-key"] = headerBytes(fields.orderingKey);
  return headers;
}

/**
 * A CloudEvent that is not a Pub/Sub message, for {@link cloudEventRequest}: what Eventarc
 * delivers for Cloud Storage, Cloud Audit Logs or a custom event.
 *
 * @example
 * ```ts
 * import { type CloudEventFields, cloudEventRequest } from "gcp-pubsub-idempotency/testing";
 *
 * const finalized: CloudEventFields = {
 *   type: "google.cloud.storage.object.v1.finalized",
 *   source: "//storage.googleapis.com/projects/_/buckets/invoices",
 *   subject: "objects/2026/01.pdf",
 *   data: { bucket: "invoices", name: "2026/01.pdf" },
 *   extensions: { bucket: "invoices" },
 * };
 * const request = cloudEventRequest(finalized, "structured");
 * ```
 */
export interface CloudEventFields {
  /** The event type, e.g. `google.cloud.storage.object.v1.finalized`. */
  type: string;
  /** The producer, e.g. `//storage.googleapis.com/projects/_/buckets/invoices`. */
  source: string;
  /** Default: a fresh id from {@link nextMessageId}. */
  id?: string;
  /** Default: none (an empty body). Bytes and strings go as they are, anything else as JSON. */
  data?: Payload;
  /** Default: `application/json`, `text/plain; charset=utf-8` for a string, `application/octet-stream` for bytes. */
  datacontenttype?: string;
  /** Default: none. */
  subject?: string;
  /** RFC 3339 time; default now. */
  time?: string;
  /** Extension attributes (names of lower-case letters and digits); default none. */
  extensions?: Record<string, string>;
}

const CLOUD_EVENT_ATTRIBUTE = /^[a-z0-9]+$/;

/**
 * Percent-encode a binary-mode header value as the CloudEvents HTTP binding asks: space,
 * `"`, `%` and everything outside printable ASCII, as UTF-8 bytes.
 */
function percentEncoded(value: string): string {
  let out = "";
  for (const byte of Buffer.from(value, "utf8")) {
    const printable = byte > 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x25;
    out += printable
      ? String.fromCharCode(byte)
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/**
 * The HTTP request Eventarc sends for a CloudEvent that is not a Pub/Sub message: `binary`
 * mode (`ce-*` headers, percent-encoded, and the data as the body; Eventarc's default) or
 * `structured` mode (`application/cloudevents+json`). Throws InvalidConfiguration for an
 * empty type, source or id, or an extension name that is not lower-case letters and digits.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { cloudEventRequest } from "gcp-pubsub-idempotency/testing";
 *
 * let runs = 0;
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, () => void runs++);
 * const request = cloudEventRequest({
 *   type: "google.cloud.audit.log.v1.written",
 *   source: "//cloudaudit.googleapis.com/projects/p/logs/activity",
 *   id: "a1b2",
 *   data: { protoPayload: { methodName: "storage.buckets.create" } },
 * });
 * await handler(request, { statusCode: 0, end() {} });
 * await handler(request, { statusCode: 0, end() {} }); // same source and id: a duplicate
 * console.log(runs); // 1
 * ```
 */
export function cloudEventRequest(
  event: CloudEventFields,
  mode: "binary" | "structured" = "binary",
): PushHttpRequest {
  const id = event.id ?? nextMessageId();
  for (const [name, value] of [
    ["type", event.type],
    ["source", event.source],
    ["id", id],
  ] as const) {
    if (typeof value !== "string" || value === "") {
      throw new InvalidConfiguration(`cloudEventRequest: ${name} must be a non-empty string`);
    }
  }
  const extensions = event.extensions ?? {};
  for (const name of Object.keys(extensions)) {
    if (!CLOUD_EVENT_ATTRIBUTE.test(name)) {
      throw new InvalidConfiguration(
        `cloudEventRequest: the extension name ${JSON.stringify(name)} is not lower-case letters and digits`,
      );
    }
  }
  const { data } = event;
  const bytes = data === undefined ? undefined : payloadBytes(data);
  const isRaw = Buffer.isBuffer(data) || data instanceof Uint8Array;
  const contentType =
    event.datacontenttype ??
    (isRaw
      ? "application/octet-stream"
      : typeof data === "string"
        ? "text/plain; charset=utf-8"
        : "application/json");
  const attributes: Record<string, string> = {
    ...extensions,
    specversion: "1.0",
    id,
    source: event.source,
    type: event.type,
    time: event.time ?? new Date().toISOString(),
    ...(event.subject === undefined ? {} : { subject: event.subject }),
  };
  if (mode === "structured") {
    const structured: Record<string, unknown> = { ...attributes, datacontenttype: contentType };
    if (isRaw) structured.data_base64 = bytes?.toString("base64");
    else if (data !== undefined) structured.data = data;
    return jsonRequest("application/cloudevents+json", structured);
  }
  const headers: Record<string, string> = { "content-type": contentType };
  for (const [name, value] of Object.entries(attributes)) {
    headers[`ce-${name}`] = percentEncoded(value);
  }
  return { headers, body: bytes ?? Buffer.alloc(0) };
}

/**
 * A fake `@google-cloud/pubsub` `Message` that records how it was settled.
 *
 * @example
 * ```ts
 * import { idempotentMessage, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { type FakeMessage, fakeMessage } from "gcp-pubsub-idempotency/testing";
 *
 * const listener = idempotentMessage({ backend: new InMemoryLock() }, async () => {});
 * const message: FakeMessage = fakeMessage({ po: "4711" });
 * await listener(message);
 * console.log(message.settlements); // ["ack"]
 * ```
 */
export interface FakeMessage {
  /** The message id. */
  readonly id: string;
  /** The payload bytes. */
  readonly data: Buffer;
  /** The attributes; `{}` when none were given. */
  readonly attributes: Record<string, string>;
  /** The given `publishTime`, or the time it was built. */
  readonly publishTime: Date;
  /** Only when given. */
  readonly orderingKey?: string;
  /** Only when given. */
  readonly deliveryAttempt?: number;
  /** Every ack()/nack() call in order. */
  readonly settlements: ("ack" | "nack")[];
  /** Records `"ack"` in `settlements`. */
  ack(): void;
  /** Records `"nack"` in `settlements`. */
  nack(): void;
}

/**
 * A {@link FakeMessage} for testing a pull listener built with `idempotentMessage`; pass
 * the same `messageId` twice for a redelivery. `subscription` is not used.
 *
 * @example
 * ```ts
 * import { idempotentMessage, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { fakeMessage } from "gcp-pubsub-idempotency/testing";
 *
 * const listener = idempotentMessage({ backend: new InMemoryLock() }, async () => {});
 * const redelivery = fakeMessage("hi", { messageId: "1" });
 * await listener(fakeMessage("hi", { messageId: "1" }));
 * await listener(redelivery);
 * console.log(redelivery.settlements); // ["ack"]: a duplicate is acked
 * ```
 */
export function fakeMessage(payload: Payload, fields: MessageFields = {}): FakeMessage {
  const settlements: ("ack" | "nack")[] = [];
  return {
    id: fields.messageId ?? nextMessageId(),
    data: payloadBytes(payload),
    attributes: fields.attributes ?? {},
    publishTime: new Date(fields.publishTime ?? Date.now()),
    ...(fields.orderingKey === undefined ? {} : { orderingKey: fields.orderingKey }),
    ...(fields.deliveryAttempt === undefined ? {} : { deliveryAttempt: fields.deliveryAttempt }),
    settlements,
    ack: () => {
      settlements.push("ack");
    },
    nack: () => {
      settlements.push("nack");
    },
  };
}

/**
 * A `node:http` request listener, e.g. the function `idempotentHttp` returns.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 * import type { RequestListener } from "gcp-pubsub-idempotency/testing";
 *
 * const handler: RequestListener = idempotentHttp({ backend: new InMemoryLock() }, async () => {});
 * ```
 */
export type RequestListener = (req: IncomingMessage, res: ServerResponse) => unknown;

/**
 * Options of {@link simulatePushDeliveries}. Give `url` or `handler`.
 *
 * @example
 * ```ts
 * import { type SimulateOptions, simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";
 *
 * const options: SimulateOptions = {
 *   url: "http://127.0.0.1:8080/push",
 *   messages: [{ po: "1" }, { po: "2" }],
 *   copies: 5,
 *   concurrency: 3,
 * };
 * const report = await simulatePushDeliveries(options);
 * ```
 */
export interface SimulateOptions {
  /** The push endpoint; or give `handler` and a local server is started on port 0. */
  url?: string;
  /** Served on 127.0.0.1 for the run when no `url` is given; a rejection answers 500. */
  handler?: RequestListener;
  /** Payloads (each becomes a message with a fresh id) or push bodies from {@link pushBody}. */
  messages?: readonly (Payload | PushBody)[];
  /** How `messages` are sent; default `wrapped`, the push body. */
  format?: PushFormat;
  /**
   * Requests sent as they are, e.g. from {@link cloudEventRequest} or {@link pushRequest}; each
   * is one message, delivered `copies` times and redelivered like the others. Default none.
   */
  requests?: readonly PushHttpRequest[];
  /** Deliveries of each message that Pub/Sub makes regardless of acks; default 3. */
  copies?: number;
  /** How many of those copies go at the same moment; default 2. The rest follow one by one. */
  concurrency?: number;
  /** Redeliveries after a non-2xx (like a retry policy); default 5. */
  maxRedeliveries?: number;
  /** Backoff before the n-th redelivery: `backoffMs * 2^(n-1)`; default 20. */
  backoffMs?: number;
  /**
   * Send `deliveryAttempt` in the envelope (as with a dead-letter policy); default true. Only
   * formats with a push body carry it: Pub/Sub writes none for an unwrapped push.
   */
  deliveryAttempts?: boolean;
  /**
   * The `Authorization` header of each delivery, as an authenticated push subscription sends
   * it; a function is called per delivery (e.g. `() => identity.authorization()` with a
   * {@link createTestIdentity} identity). Default: none.
   */
  authorization?: string | (() => string | undefined);
}

/**
 * What happened to one message in {@link simulatePushDeliveries}.
 *
 * @example
 * ```ts
 * import { type MessageReport, simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";
 *
 * const report = await simulatePushDeliveries({ url: "http://127.0.0.1:8080/", messages: ["hi"] });
 * const first: MessageReport | undefined = report.messages[0];
 * console.log(first?.messageId, first?.statuses); // e.g. "1733…" [204, 204, 204]
 * ```
 */
export interface MessageReport {
  /**
   * The message id every delivery of it carried; for a request of `requests` that carries
   * none (a CloudEvent that is no Pub/Sub message), the event id; "" when it has neither.
   */
  readonly messageId: string;
  /** The HTTP status of each delivery, in the order the responses came; 0 for a network error. */
  readonly statuses: number[];
  /** True when at least one delivery got a 2xx. */
  readonly acked: boolean;
}

/**
 * The result of {@link simulatePushDeliveries}.
 *
 * @example
 * ```ts
 * import { type SimulationReport, simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";
 *
 * const report: SimulationReport = await simulatePushDeliveries({
 *   url: "http://127.0.0.1:8080/",
 *   messages: [{ po: "4711" }],
 * });
 * if (report.unacked.length > 0) throw new Error(`never acked: ${report.unacked.join(", ")}`);
 * ```
 */
export interface SimulationReport {
  /** Count of responses per HTTP status; network errors count under 0. */
  readonly statusCounts: Record<number, number>;
  /** Requests made in all, redeliveries included. */
  readonly deliveries: number;
  /** One report per message, in the order of `options.messages`, then of `options.requests`. */
  readonly messages: MessageReport[];
  /** Message ids that never got a 2xx. */
  readonly unacked: string[];
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** What a prebuilt request is reported by: its messageId, else its event id, else "". */
function requestId(request: PushHttpRequest): string {
  try {
    const message = parsePushRequest(request, request.body);
    return message.messageId || message.event?.id || "";
  } catch {
    return ""; // a malformed request on purpose: the endpoint's answer is what counts
  }
}

function isPushBody(value: unknown): value is PushBody {
  if (value === null || typeof value !== "object" || Buffer.isBuffer(value)) return false;
  const message = (value as { message?: unknown }).message;
  return (
    message !== null &&
    typeof message === "object" &&
    typeof (message as { messageId?: unknown }).messageId === "string"
  );
}

async function post(
  url: string,
  request: PushHttpRequest,
  authorization?: string,
): Promise<number> {
  try {
    const headers = { ...request.headers };
    if (authorization !== undefined) headers.authorization = authorization;
    const response = await fetch(url, { method: "POST", headers, body: request.body });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/**
 * Deliver every message several times over real HTTP, the way Pub/Sub does under
 * at-least-once delivery: `concurrency` copies at once, the remaining copies one after
 * another, and after each non-2xx a redelivery with exponential backoff. Returns counts
 * of the statuses seen. Throws a TypeError when neither `url` nor `handler` is given.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";
 *
 * let runs = 0;
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, async () => void runs++);
 * const report = await simulatePushDeliveries({ handler, messages: [{ po: "1" }, { po: "2" }] });
 * console.log(runs, report.unacked); // 2 []
 * ```
 */
export async function simulatePushDeliveries(options: SimulateOptions): Promise<SimulationReport> {
  const whole = (name: string, value: number | undefined, fallback: number, least: number) => {
    const n = value ?? fallback;
    if (!Number.isSafeInteger(n) || n < least) {
      throw new InvalidConfiguration(
        `simulatePushDeliveries ${name} must be an integer >= ${least}, got ${String(value)}`,
      );
    }
    return n;
  };
  const copies = whole("copies", options.copies, 3, 1);
  const concurrency = Math.min(whole("concurrency", options.concurrency, 2, 1), copies);
  const maxRedeliveries = whole("maxRedeliveries", options.maxRedeliveries, 5, 0);
  const backoffMs = whole("backoffMs", options.backoffMs, 20, 0);
  const withAttempts = options.deliveryAttempts ?? true;
  const { authorization } = options;
  const authorizationOf = typeof authorization === "function" ? authorization : () => authorization;

  let url = options.url;
  let server: ReturnType<typeof createServer> | undefined;
  if (url === undefined) {
    const { handler } = options;
    if (!handler) throw new TypeError("simulatePushDeliveries needs a url or a handler");
    server = createServer((req, res) => {
      Promise.resolve(handler(req, res)).catch(() => {
        if (!res.headersSent) res.statusCode = 500;
        res.end();
      });
    });
    await new Promise<void>((done) => server?.listen(0, "127.0.0.1", done));
    const { port } = server.address() as AddressInfo;
    url = `http://127.0.0.1:${port}/`;
  }
  const target = url;

  const statusCounts: Record<number, number> = {};
  let deliveries = 0;
  const count = (status: number) => {
    statusCounts[status] = (statusCounts[status] ?? 0) + 1;
    deliveries += 1;
  };

  const format = options.format ?? "wrapped";
  /** The message id a message goes by, and its request at each delivery attempt. */
  const deliveriesOf = (
    input: Payload | PushBody,
  ): { messageId: string; request: (attempt: number) => PushHttpRequest } => {
    const base = isPushBody(input) ? input : pushBody(input as Payload);
    const { message } = base;
    const fields: MessageFields = {
      messageId: message.messageId,
      attributes: message.attributes,
      publishTime: message.publishTime,
      subscription: base.subscription,
      ...(message.orderingKey === undefined ? {} : { orderingKey: message.orderingKey }),
    };
    const data = Buffer.from(message.data, "base64");
    return {
      messageId: message.messageId,
      request: (attempt) => {
        if (format === "wrapped") {
          const body = withAttempts ? { ...base, deliveryAttempt: attempt } : base;
          return jsonRequest("application/json", body);
        }
        const attempted = withAttempts ? { ...fields, deliveryAttempt: attempt } : fields;
        return pushRequest(data, attempted, format);
      },
    };
  };

  const runMessage = async (delivery: {
    messageId: string;
    request: (attempt: number) => PushHttpRequest;
  }) => {
    const statuses: number[] = [];
    let attempt = 0;
    // Each copy is an independent delivery chain that retries its own nacks.
    const chain = async () => {
      for (let retry = 0; ; retry += 1) {
        attempt += 1;
        const status = await post(target, delivery.request(attempt), authorizationOf());
        statuses.push(status);
        count(status);
        if ((status >= 200 && status < 300) || retry >= maxRedeliveries) return;
        await sleep(backoffMs * 2 ** retry);
      }
    };
    const concurrent: Promise<void>[] = [];
    for (let i = 0; i < concurrency; i += 1) concurrent.push(chain());
    await Promise.all(concurrent);
    for (let i = concurrency; i < copies; i += 1) await chain();
    return {
      messageId: delivery.messageId,
      statuses,
      acked: statuses.some((s) => s >= 200 && s < 300),
    };
  };

  try {
    const asIs = (request: PushHttpRequest) => ({
      messageId: requestId(request),
      request: () => request,
    });
    const messages = await Promise.all([
      ...(options.messages ?? []).map((input) => runMessage(deliveriesOf(input))),
      ...(options.requests ?? []).map((request) => runMessage(asIs(request))),
    ]);
    return {
      statusCounts,
      deliveries,
      messages,
      unacked: messages.filter((m) => !m.acked).map((m) => m.messageId),
    };
  } finally {
    if (server) {
      const s = server;
      await new Promise<void>((done) => {
        s.close(() => done());
        s.closeAllConnections();
      });
    }
  }
}
