// The wrapped push envelope `{message, subscription, deliveryAttempt}`: the body of a Pub/Sub
// push, and the data of a Pub/Sub CloudEvent. Both spellings Pub/Sub has used are read
// (`messageId`/`message_id`, `publishTime`/`publish_time`, …); two that disagree are refused.
import type { CloudEventAttributes } from "./cloud-event-attributes.js";
import {
  attributesOf,
  decodeBase64,
  deliveryAttemptOf,
  fail,
  isObject,
  isTimestamp,
  type Json,
  jsonObject,
  shown,
  stringField,
} from "./fields.js";
import { makeMessage, type ParsedMessage } from "./parsed-message.js";

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
