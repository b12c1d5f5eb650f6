// One push as the HTTP request each push format sends: headers and exact body bytes, for a
// wrapped push, an unwrapped push with or without metadata headers, and a CloudEvent in binary
// or structured mode.
import { Buffer } from "node:buffer";
import { InvalidConfiguration } from "../core/errors.js";
import {
  binaryCloudEvent,
  DEFAULT_SUBSCRIPTION,
  type MessageFields,
  nextMessageId,
  type Payload,
  payloadBytes,
  pushBody,
  structuredCloudEvent,
} from "./messages.js";
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

export function jsonRequest(
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
