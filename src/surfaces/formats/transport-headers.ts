// Which headers of an unwrapped push with metadata are the transport's: with write-metadata,
// every other header of the request is one of the message's attributes.

/**
 * The request headers that are never message attributes of an unwrapped push with metadata
 * (`--push-no-wrapper-write-metadata`), lower case: the headers HTTP, its clients, proxies,
 * Google's front end and tracing add. Pub/Sub writes each attribute as a header of its own
 * name beside these; every other header of such a request is an attribute in
 * `message.attributes`. An entry ending in `*` covers every name that starts with the text
 * before it (`x-goog-*`: Pub/Sub's own `x-goog-pubsub-*` metadata among them).
 *
 * What cannot survive the trip as an attribute, then: an attribute named like an entry (in
 * any case: `Content-Type`, `Host`, `From`, `Date`, `traceparent`, `x-goog-…`, `sec-…`) is
 * dropped; HTTP folds header names to lower case, so `orderId` arrives as
 * `attributes.orderid`, and two attributes whose names differ only in case arrive as one
 * header whose values are joined with `", "`; an attribute name that is not an HTTP header
 * name (a space, a colon) cannot be sent as a header at all. Key on attributes with
 * lower-case names, or use a wrapped push, which carries them exactly.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock, TRANSPORT_HEADERS } from "gcp-pubsub-idempotency";
 *
 * // Refuse to start with a business attribute that an unwrapped push would lose.
 * const keyAttribute = "po";
 * if (TRANSPORT_HEADERS.some((h) => (h.endsWith("*") ? keyAttribute.startsWith(h.slice(0, -1)) : h === keyAttribute))) {
 *   throw new Error(`attribute ${keyAttribute} cannot arrive as a header`);
 * }
 * const handler = idempotentHttp(
 *   { backend: new InMemoryLock(), key: ({ message }) => message.attributes[keyAttribute] },
 *   async () => {},
 * );
 * ```
 */
export const TRANSPORT_HEADERS: readonly string[] = Object.freeze([
  // Hop-by-hop and framing (RFC 9110 section 7.6.1, RFC 9112), HTTP/2 pseudo-headers.
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
  ":*",
  // Standard request headers a client writes.
  "host",
  "content-type",
  "content-length",
  "content-encoding",
  "content-language",
  "content-md5",
  "user-agent",
  "accept",
  "accept-charset",
  "accept-encoding",
  "accept-language",
  "expect",
  "from",
  "referer",
  "origin",
  "date",
  "cache-control",
  "pragma",
  "max-forwards",
  "range",
  "if-match",
  "if-none-match",
  "if-modified-since",
  "if-unmodified-since",
  "if-range",
  "priority",
  "sec-*",
  // Credentials.
  "authorization",
  "proxy-authorization",
  "cookie",
  // Proxies, load balancers and tracing.
  "via",
  "forwarded",
  "x-forwarded-*",
  "x-real-ip",
  "x-request-id",
  "x-cloud-trace-context",
  "traceparent",
  "tracestate",
  "baggage",
  // Google's front end, and Pub/Sub's own metadata (x-goog-pubsub-*).
  "x-goog-*",
]);

/** {@link TRANSPORT_HEADERS} as exact names, and the prefixes of its `*` entries. */
const TRANSPORT_EXACT = new Set(TRANSPORT_HEADERS.filter((name) => !name.endsWith("*")));
const TRANSPORT_PREFIXES = TRANSPORT_HEADERS.filter((name) => name.endsWith("*")).map((name) =>
  name.slice(0, -1),
);

/** Whether a lower-case header name is one of {@link TRANSPORT_HEADERS}. */
export function isTransportHeader(name: string): boolean {
  if (TRANSPORT_EXACT.has(name)) return true;
  for (const prefix of TRANSPORT_PREFIXES) if (name.startsWith(prefix)) return true;
  return false;
}
