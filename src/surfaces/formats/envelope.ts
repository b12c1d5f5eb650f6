// One entry for a value whose shape the caller does not know: a pull Message, a CloudEvent or
// a push body, told apart by what each alone has.
import { isObject } from "./fields.js";
import type { ParsedMessage } from "./parsed-message.js";
import { parseCloudEvent } from "./pubsub-cloud-event.js";
import { isPullMessage, parsePubSubMessage } from "./pull-message.js";
import { parsePushBody } from "./push-envelope.js";

/**
 * Parse whichever of the three shapes `input` is: a pull `Message`, a CloudEvent (has
 * `specversion` or a `type`), or a raw push body (object, JSON string or bytes).
 * Throws {@link MalformedMessage}.
 *
 * @example
 * ```ts
 * import { parseEnvelope } from "gcp-pubsub-idempotency";
 *
 * declare const input: unknown; // a push body, a CloudEvent or a pull Message
 * const { messageId, attributes } = parseEnvelope(input);
 * ```
 */
export function parseEnvelope(input: unknown): ParsedMessage {
  if (isPullMessage(input)) return parsePubSubMessage(input);
  if (isObject(input) && ("specversion" in input || typeof input.type === "string")) {
    return parseCloudEvent(input);
  }
  return parsePushBody(input);
}
