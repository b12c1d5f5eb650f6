// The formats a push request can be read as, and how the reasons name each: a 400 says what
// the gateway read the request as, so a sender sees which of its settings to change.

/** The formats `readPushRequest` tells apart, as its reasons name them. */
export type PushFormat =
  | "request"
  | "envelope"
  | "unwrapped"
  | "unwrapped-metadata"
  | "binary"
  | "structured";

/** Each format as the start of a malformed reason names it. */
export const FORMAT_LABEL: Readonly<Record<PushFormat, string>> = {
  request: "push request",
  envelope: "Pub/Sub push envelope",
  unwrapped: "unwrapped push without metadata",
  "unwrapped-metadata": "unwrapped push with metadata (x-goog-pubsub-* headers)",
  binary: "CloudEvent in binary mode (ce-* headers)",
  structured: "CloudEvent in structured mode (application/cloudevents+json)",
};

/** Each format as a reason names what the gateway read ("read as …"). */
export const READ_AS: Readonly<Record<PushFormat, string>> = {
  request: "a push request",
  envelope: "a Pub/Sub push envelope",
  unwrapped: "an unwrapped push without metadata",
  "unwrapped-metadata": "an unwrapped push with metadata (x-goog-pubsub-* headers)",
  binary: "a CloudEvent in binary mode (ce-* headers)",
  structured: "a CloudEvent in structured mode (application/cloudevents+json)",
};
