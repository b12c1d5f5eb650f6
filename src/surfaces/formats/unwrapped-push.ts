// An unwrapped push (`--push-no-wrapper`): the body is the message data. With write-metadata
// the message's metadata and attributes come as headers; without it there is no messageId.
import { Buffer } from "node:buffer";
import { MAX_KEY_BYTES } from "../../core/constants.js";
import { cloudEventStringFlaw } from "./cloud-event-attributes.js";
import { fail, isObject, isTimestamp, shown } from "./fields.js";
import { makeMessage, type ParsedMessage } from "./parsed-message.js";
import { bodyBytes, jsonBody } from "./push-body.js";
import { fromEnvelopeObject } from "./push-envelope.js";
import type { PushFormat } from "./push-format.js";
import {
  EMULATOR_ORDERING_KEY,
  headerText,
  MESSAGE_ID,
  ORDERING_KEY,
  PUBLISH_TIME,
  type PushRequestHeaders,
  type RequestHeaders,
  SUBSCRIPTION,
} from "./request-headers.js";
import { isTransportHeader } from "./transport-headers.js";

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

export function unwrappedWithMetadata(
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

/** An unwrapped push without metadata: the body is the data, and nothing names the message. */
export function unwrappedWithoutMetadata(body: unknown): ParsedMessage {
  return makeMessage({
    messageId: "",
    data: bodyBytes(body),
    attributes: {},
    publishTime: undefined,
    orderingKey: undefined,
    deliveryAttempt: undefined,
    subscription: undefined,
  });
}
