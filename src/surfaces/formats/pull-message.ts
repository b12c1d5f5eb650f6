// A message pulled with `@google-cloud/pubsub` (a `Message`, or anything of its shape): already
// decoded by the client library, so only what the gateway reads of it is checked.
import { Buffer } from "node:buffer";
import { attributesOf, deliveryAttemptOf, fail, isBytes, isObject, shown } from "./fields.js";
import { makeMessage, type ParsedMessage } from "./parsed-message.js";

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
export function isPullMessage(input: unknown): input is PubSubMessageLike {
  return isObject(input) && typeof input.ack === "function" && typeof input.nack === "function";
}
