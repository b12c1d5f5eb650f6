// The one message every surface hands on, whichever envelope carried it: ids and metadata
// read and checked, the data as bytes, and its text or JSON read only when the handler asks.
import type { Buffer } from "node:buffer";
import { MalformedMessage } from "../../core/errors.js";
import type { CloudEventAttributes } from "./cloud-event-attributes.js";

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

/** What a parser read of one message, each field already checked. */
export interface MessageFields {
  messageId: string;
  data: Buffer;
  attributes: Record<string, string>;
  publishTime: Date | string | undefined;
  orderingKey: string | undefined;
  deliveryAttempt: number | undefined;
  subscription: string | undefined;
  event?: CloudEventAttributes | undefined;
}

/** Assemble a frozen {@link ParsedMessage}; every parser ends here. */
export function makeMessage(fields: MessageFields): ParsedMessage {
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
  // An absent optional field is left out, as the type declares it, rather than set to
  // undefined (exactOptionalPropertyTypes); an empty orderingKey is no ordering key.
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
