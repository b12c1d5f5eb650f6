// The default idempotency key of what arrives: the Pub/Sub messageId when there is one, and for
// a CloudEvent that is not a Pub/Sub message its `source` and `id`, the pair the CloudEvents
// spec makes unique (spec 1.0, "id": "Producers MUST ensure that source + id is unique for
// each distinct event").
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { MAX_KEY_BYTES } from "../../core/constants.js";
import { InvalidKey } from "../../core/errors.js";
import { cloudEventStringFlaw } from "./cloud-event-attributes.js";
import { isObject, shown } from "./fields.js";
import { cloudEventMessageId, MESSAGE_PUBLISHED_TYPE } from "./pubsub-cloud-event.js";

/**
 * The idempotency key of a CloudEvent that is not a Pub/Sub message: its `source` and `id`
 * as the JSON array `[source, id]` (JSON.stringify: no spaces, non-ASCII characters as
 * they are), which no two distinct pairs share. When that text is over
 * {@link MAX_KEY_BYTES} it is replaced by `cloudevent-sha256:` and the hex SHA-256 of it, so
 * an event with a long source is still processed once rather than refused. Throws
 * {@link InvalidKey} for an empty source or id.
 *
 * @example
 * ```ts
 * import { cloudEventSourceIdKey } from "gcp-pubsub-idempotency";
 *
 * // The key to `inspect` or `release` for a Cloud Storage event:
 * cloudEventSourceIdKey("//storage.googleapis.com/projects/_/buckets/invoices", "7315150283471224");
 * // '["//storage.googleapis.com/projects/_/buckets/invoices","7315150283471224"]'
 * ```
 */
export function cloudEventSourceIdKey(source: string, id: string): string {
  if (typeof source !== "string" || source === "" || typeof id !== "string" || id === "") {
    throw new InvalidKey(
      `a CloudEvent key needs a non-empty source and id, got ${shown(source)} and ${shown(id)}`,
    );
  }
  const key = JSON.stringify([source, id]);
  if (key.length * 3 <= MAX_KEY_BYTES || Buffer.byteLength(key, "utf8") <= MAX_KEY_BYTES) {
    return key;
  }
  return `cloudevent-sha256:${createHash("sha256").update(key, "utf8").digest("hex")}`;
}

/**
 * The default idempotency key of a CloudEvent as {@link idempotent} receives it: the Pub/Sub
 * messageId for a `messagePublished` event (or one without a type), {@link cloudEventSourceIdKey}
 * for any other type. Undefined when the event carries no usable id (refused, fail closed).
 *
 * @example
 * ```ts
 * import { cloudEventKey, idempotent, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * // Namespace the default key per service.
 * const key = (event: unknown) => {
 *   const id = cloudEventKey(event);
 *   return id === undefined ? undefined : `audit:${id}`;
 * };
 * const handler = idempotent({ backend: new InMemoryLock(), key }, async () => {});
 * ```
 */
export function cloudEventKey(event: unknown): string | undefined {
  if (!isObject(event)) return undefined;
  const { type } = event;
  if (type === undefined || type === MESSAGE_PUBLISHED_TYPE) return cloudEventMessageId(event);
  const { source, id } = event;
  if (typeof source !== "string" || typeof id !== "string" || source === "" || id === "") {
    return undefined;
  }
  if (cloudEventStringFlaw(source) !== undefined || cloudEventStringFlaw(id) !== undefined) {
    return undefined;
  }
  return cloudEventSourceIdKey(source, id);
}
