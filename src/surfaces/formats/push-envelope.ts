// The wrapped push envelope `{message, subscription, deliveryAttempt}`: the body of a Pub/Sub
// push, and the data of a Pub/Sub CloudEvent. Both spellings Pub/Sub has used are read
// (`messageId`/`message_id`, `publishTime`/`publish_time`, …); two that disagree are refused.
import type { CloudEventAttributes } from "./cloud-event-attributes.js";
import {
  attributesOf,
  checkAttributes,
  checkBase64,
  decodeChecked,
  deliveryAttemptOf,
  fail,
  isObject,
  isTimestamp,
  type Json,
  jsonObject,
  shown,
  stringValue,
} from "./fields.js";
import { makeMessage, type ParsedMessage } from "./parsed-message.js";

/**
 * An envelope every field of which is checked, its message not made yet: the data is known to
 * be base64 but not decoded, the attributes known to be strings but not copied. What the key
 * and the log lines need is here; {@link envelopeMessage} makes the rest when a handler runs.
 */
export interface CheckedEnvelope {
  readonly messageId: string;
  readonly subscription: string | undefined;
  readonly deliveryAttempt: number | undefined;
  readonly publishTime: string | undefined;
  readonly orderingKey: string | undefined;
  /** Checked base64, or undefined for no data. */
  readonly data: string | undefined;
  /** Checked: absent, or an object of strings. */
  readonly attributes: unknown;
  /** Where reasons name the message (`data.message.` inside a CloudEvent). */
  readonly at: string;
  readonly event: CloudEventAttributes | undefined;
}

/**
 * Check the `{message, subscription?, deliveryAttempt?}` object common to push and CloudEvent
 * as {@link fromEnvelopeObject} does, in the same order and with the same reasons, without
 * decoding or copying anything.
 */
export function checkEnvelope(
  envelope: Json,
  where: string,
  event?: CloudEventAttributes,
): CheckedEnvelope {
  const raw = envelope.message;
  if (raw === undefined) fail(`${where}has no "message" field`);
  if (!isObject(raw)) fail(`${where}message must be an object, got ${shown(raw)}`);
  const m = `${where}message.`;
  // Each field read by its own name, not through stringField: see stringValue.
  const camel = stringValue(raw.messageId, "messageId", m);
  const snake = stringValue(raw.message_id, "message_id", m);
  if (camel !== undefined && snake !== undefined && camel !== snake) {
    fail(`${m}messageId and ${m}message_id disagree`);
  }
  const messageId = camel ?? snake;
  if (messageId === undefined) fail(`${m}messageId is missing`);
  if (messageId === "") fail(`${m}messageId is empty`);
  const publishTime =
    stringValue(raw.publishTime, "publishTime", m) ??
    stringValue(raw.publish_time, "publish_time", m);
  if (publishTime !== undefined && !isTimestamp(publishTime)) {
    fail(`${m}publishTime is not a timestamp: ${shown(publishTime)}`);
  }
  const data = checkBase64(raw.data);
  const { attributes } = raw;
  checkAttributes(attributes, m);
  const orderingKey =
    stringValue(raw.orderingKey, "orderingKey", m) ??
    stringValue(raw.ordering_key, "ordering_key", m);
  return {
    messageId,
    // The envelope's own fields, checked after the message's.
    deliveryAttempt: deliveryAttemptOf(envelope.deliveryAttempt ?? envelope.delivery_attempt),
    subscription: stringValue(envelope.subscription, "subscription", where),
    publishTime,
    orderingKey,
    data,
    attributes,
    at: m,
    event,
  };
}

/** The message of a checked envelope: its data decoded, its attributes copied, frozen. */
export function envelopeMessage(checked: CheckedEnvelope): ParsedMessage {
  return makeMessage({
    messageId: checked.messageId,
    data: decodeChecked(checked.data),
    attributes: attributesOf(checked.attributes, checked.at),
    publishTime: checked.publishTime,
    orderingKey: checked.orderingKey,
    deliveryAttempt: checked.deliveryAttempt,
    subscription: checked.subscription,
    event: checked.event,
  });
}

/** Parse the `{message, subscription?, deliveryAttempt?}` object common to push and CloudEvent. */
export function fromEnvelopeObject(
  envelope: Json,
  where: string,
  event?: CloudEventAttributes,
): ParsedMessage {
  return envelopeMessage(checkEnvelope(envelope, where, event));
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
