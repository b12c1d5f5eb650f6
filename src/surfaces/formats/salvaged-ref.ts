// What a log line can still name of a push that could not be parsed, read without trusting it.
import type { MessageRef } from "../../core/logger.js";
import { isBytes, isObject } from "./fields.js";
import { jsonBody } from "./push-body.js";
import { MESSAGE_ID, type PushRequestHeaders, SUBSCRIPTION } from "./request-headers.js";

/** The longest id or subscription a malformed push's log line repeats. */
const SALVAGED_CHARS = 256;

/**
 * What a log line can still name of a push that could not be parsed: the messageId and
 * subscription from the metadata headers or the envelope, each only when it is text, cut
 * to {@link SALVAGED_CHARS}. Total: a request or body that cannot be read names nothing.
 */
export function salvagedRef(request: PushRequestHeaders, body: unknown): MessageRef {
  try {
    const headers = request.headers;
    const header = (name: string) => capped(isObject(headers) ? headers[name] : undefined);
    const messageId = header(MESSAGE_ID) ?? header("ce-id");
    if (messageId !== undefined) return { messageId, subscription: header(SUBSCRIPTION) };
    const json = isObject(body)
      ? body
      : typeof body === "string" || isBytes(body)
        ? jsonBody(body)
        : undefined;
    if (json === undefined) return {};
    const inner = isObject(json.message) ? json.message : isObject(json.data) ? json.data : {};
    const message = isObject(inner.message) ? inner.message : inner;
    const attempt = json.deliveryAttempt;
    return {
      messageId: capped(message.messageId) ?? capped(message.message_id),
      subscription: capped(json.subscription) ?? capped(inner.subscription),
      deliveryAttempt: Number.isSafeInteger(attempt) ? (attempt as number) : undefined,
    };
  } catch {
    return {};
  }
}

function capped(value: unknown): string | undefined {
  if (typeof value !== "string" || value === "") return undefined;
  return value.length > SALVAGED_CHARS ? `${value.slice(0, SALVAGED_CHARS)}...` : value;
}
