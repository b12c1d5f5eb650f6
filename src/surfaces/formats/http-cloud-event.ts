// A CloudEvent over HTTP (Eventarc, Eventarc Advanced): binary mode (`ce-*` headers, the body is
// the data) or structured mode (`content-type: application/cloudevents+json`). A Pub/Sub
// event's data is the push envelope; any other event's data is kept as it came.
import { Buffer } from "node:buffer";
import {
  ATTRIBUTE_NAME,
  type CloudEventAttributes,
  checkedAttributes,
} from "./cloud-event-attributes.js";
import { decodeBase64, fail, isObject, jsonObject, shown } from "./fields.js";
import { makeMessage, type ParsedMessage } from "./parsed-message.js";
import { MESSAGE_PUBLISHED_TYPE } from "./pubsub-cloud-event.js";
import { bodyBytes } from "./push-body.js";
import { fromEnvelopeObject } from "./push-envelope.js";
import { declaredJson, mediaType, type RequestHeaders } from "./request-headers.js";

/** A `ce-*` header value: percent-encoded text (CloudEvents HTTP binding 1.0, 3.1.3.2). */
function percentDecoded(name: string, value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return fail(`the ${name} header is not valid percent-encoding: ${shown(value)}`);
  }
}

export function binaryCloudEvent(
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

export function structuredCloudEvent(body: unknown): ParsedMessage {
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
  return media === undefined || declaredJson(media);
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
