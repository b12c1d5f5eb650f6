// Builders of Pub/Sub messages as tests need them: payloads, message ids, push bodies,
// CloudEvent objects and a fake pull Message that records how it was settled; every builder
// shares the payload, id and attribute rules.
import { Buffer } from "node:buffer";
import { MESSAGE_PUBLISHED_TYPE } from "../surfaces/formats/pubsub-cloud-event.js";

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

export const DEFAULT_SUBSCRIPTION = "projects/test-project/subscriptions/test-sub";
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
