// Which of the HTTP shapes a push request has, and the ParsedMessage in it:
// - a wrapped Pub/Sub push: a JSON body `{message, subscription}`;
// - an unwrapped push (`--push-no-wrapper`): the body is the message data; with
//   `--push-no-wrapper-write-metadata` the metadata comes as `x-goog-pubsub-*` headers;
// - a CloudEvent (Eventarc, Eventarc Advanced) in binary mode (`ce-*` headers, the body is the
//   data) or structured mode (`content-type: application/cloudevents+json`).
// Headers decide before the body does: a payload is the publisher's, and a field in it (a
// `message` of its own) must never choose the key. Each format is recognised only after the
// ones before it; the formats themselves are read in the modules imported here.
import { MalformedMessage } from "../../core/errors.js";
import { fail, isObject, MALFORMED_PREFIX, shown } from "./fields.js";
import { binaryCloudEvent, structuredCloudEvent } from "./http-cloud-event.js";
import type { ParsedMessage } from "./parsed-message.js";
import { jsonBody } from "./push-body.js";
import { type CheckedEnvelope, checkEnvelope, envelopeMessage } from "./push-envelope.js";
import { FORMAT_LABEL, type PushFormat } from "./push-format.js";
import {
  declaredJson,
  MESSAGE_ID,
  mediaType,
  type PushRequestHeaders,
  RequestHeaders,
} from "./request-headers.js";
import { unwrappedWithMetadata, unwrappedWithoutMetadata } from "./unwrapped-push.js";

/**
 * Parse a push request of any format `idempotentHttp` accepts, from its headers and its body
 * (bytes, text, or an object a JSON body parser made): a wrapped push, an unwrapped push with
 * or without write-metadata, or a CloudEvent in binary or structured mode. The format is
 * decided in this order:
 *
 * 1. `content-type: application/cloudevents+json` → a structured CloudEvent;
 * 2. a `ce-specversion` or `ce-id` header → a binary CloudEvent;
 * 3. an `x-goog-pubsub-message-id` header → an unwrapped push with metadata (the body is the
 *    data, whatever it holds, unless it is a push body of that same messageId);
 * 4. a JSON object body with a `message` member → a wrapped push;
 * 5. anything else → an unwrapped push without metadata: `messageId` is `""`.
 *
 * Throws {@link MalformedMessage} with a one-line reason.
 *
 * @example
 * ```ts
 * import { parsePushRequest } from "gcp-pubsub-idempotency";
 *
 * // A Fastify or Hono route: hand over the headers and the raw body.
 * const message = parsePushRequest(
 *   { headers: { "x-goog-pubsub-message-id": "7", "x-goog-pubsub-publish-time": "2026-01-01T00:00:00Z" } },
 *   Buffer.from('{"po":"4711"}'),
 * );
 * console.log(message.messageId, message.json()); // 7 { po: '4711' }
 * ```
 */
export function parsePushRequest(request: PushRequestHeaders, body: unknown): ParsedMessage {
  const read = readPushRequest(request, body);
  return read.message !== undefined ? read.message : envelopeMessage(read.envelope);
}

/**
 * A push request as read before its claim, every field checked: a wrapped push's envelope
 * not yet made into its message (its data not decoded, its attributes not copied: that
 * waits for a handler that runs), any other format's message made.
 */
export type PushRead =
  | { readonly format: PushFormat; readonly envelope: CheckedEnvelope; readonly message?: never }
  | { readonly format: PushFormat; readonly envelope?: never; readonly message: ParsedMessage };

/**
 * {@link parsePushRequest} with the format it read the request as, a wrapped push left as
 * its checked envelope. A malformed request throws {@link MalformedMessage} whose reason
 * starts by naming the format it was read as (`malformed Pub/Sub push envelope:
 * message.messageId is missing`): the same reasons as parsePushRequest, all before the claim.
 */
export function readPushRequest(request: PushRequestHeaders, body: unknown): PushRead {
  let format: PushFormat = "request";
  try {
    if (!isObject(request)) fail(`the request is ${shown(request)}`);
    const headers = new RequestHeaders(request);
    const contentType = headers.one("content-type");
    const media = mediaType(contentType);
    if (media === "application/cloudevents+json") {
      format = "structured";
      return { message: structuredCloudEvent(body), format };
    }
    if (media?.startsWith("application/cloudevents")) {
      fail(
        `content-type ${shown(media)} is not read: only application/cloudevents+json and binary mode`,
      );
    }
    if (headers.has("ce-specversion") || headers.has("ce-id")) {
      format = "binary";
      return { message: binaryCloudEvent(headers, contentType, body), format };
    }
    if (isObject(body) && media === "application/x-www-form-urlencoded") {
      // What a form parser made of the data cannot be turned back into it.
      fail(
        "the body was parsed as a form by a body parser; mount the push route without one, or with express.raw()",
      );
    }
    if (headers.has(MESSAGE_ID)) {
      format = "unwrapped-metadata";
      return unwrappedWithMetadata(request, headers, body);
    }
    // No metadata: a body declared JSON must be JSON, or it is no push at all.
    const json = jsonBody(body, declaredJson(media) ? media : undefined);
    if (json !== undefined && Object.hasOwn(json, "message")) {
      format = "envelope";
      return { envelope: checkEnvelope(json, ""), format };
    }
    format = "unwrapped";
    return { message: unwrappedWithoutMetadata(body), format };
  } catch (error) {
    if (error instanceof MalformedMessage && error.message.startsWith(MALFORMED_PREFIX)) {
      const reason = error.message.slice(MALFORMED_PREFIX.length);
      throw new MalformedMessage(`malformed ${FORMAT_LABEL[format]}: ${reason}`);
    }
    throw error;
  }
}
