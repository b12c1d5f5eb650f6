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
import type { ParsedMessage } from "./parsed-message.js";
import { cloudEventMessageId, MESSAGE_PUBLISHED_TYPE } from "./pubsub-cloud-event.js";
import { type PushFormat, READ_AS } from "./push-format.js";
import { MESSAGE_ID } from "./request-headers.js";

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

/**
 * The key `idempotentHttp` uses for a parsed message when no `key` option is given: the
 * Pub/Sub messageId, or for a CloudEvent that is not a Pub/Sub message its source and id
 * ({@link cloudEventSourceIdKey}). Undefined when there is none (an unwrapped push without
 * write-metadata): such a message is refused unless a `key` option finds one.
 *
 * @example
 * ```ts
 * import { defaultMessageKey, idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * // Namespace the default key of every format per service.
 * const handler = idempotentHttp(
 *   {
 *     backend: new InMemoryLock(),
 *     key: ({ message }) => {
 *       const key = defaultMessageKey(message);
 *       return key === undefined ? undefined : `billing:${key}`;
 *     },
 *   },
 *   async () => {},
 * );
 * ```
 */
export function defaultMessageKey(message: ParsedMessage): string | undefined {
  const { event } = message;
  if (event !== undefined && event.type !== MESSAGE_PUBLISHED_TYPE) {
    return cloudEventSourceIdKey(event.source, event.id);
  }
  return message.messageId === "" ? undefined : message.messageId;
}

/**
 * Why a parsed push found no default key, for the 400 answer: what the gateway read it as
 * and what was missing. Built only for a refusal.
 */
export function missingKeyReason(message: ParsedMessage, format: PushFormat): string {
  const { event } = message;
  if (event !== undefined) {
    return event.type === MESSAGE_PUBLISHED_TYPE
      ? `read as ${READ_AS[format]}: its data carries no Pub/Sub messageId; give options.key to key it otherwise`
      : `read as ${READ_AS[format]}: its source and id make no key; give options.key to key it otherwise`;
  }
  if (message.messageId !== "") {
    return `read as ${READ_AS[format]}: it has no key; give options.key to key it otherwise`;
  }
  return (
    `read as ${READ_AS[format]} (${message.data.byteLength} bytes): no ${MESSAGE_ID} header ` +
    "and no push envelope { message, subscription }, so no Pub/Sub messageId; turn on " +
    "--push-no-wrapper-write-metadata, or give options.key"
  );
}
