// A Pub/Sub message as a CloudEvent (`google.cloud.pubsub.topic.v1.messagePublished`), the way
// functions-framework hands it to a `cloudEvent` function: `event.data` is the push envelope
// `{message, subscription}`, as an object, JSON text or JSON bytes.
import { Buffer } from "node:buffer";
import { fail, isBytes, isObject, type Json, jsonObject, shown } from "./fields.js";
import type { ParsedMessage } from "./parsed-message.js";
import { fromEnvelopeObject } from "./push-envelope.js";

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
