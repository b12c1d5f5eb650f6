// What doctor reads of a subscription: the admin API's REST answer, checked field by field (it
// is external input) into the facts the rules judge.

/** A retry policy's bounds when the answer leaves them out: Pub/Sub's defaults. */
const DEFAULT_MIN_BACKOFF_MS = 10_000;
const DEFAULT_MAX_BACKOFF_MS = 600_000;

/** What doctor reads of a subscription (Pub/Sub admin API, REST form). */
export interface SubscriptionFacts {
  readonly name: string;
  readonly topic: string | undefined;
  readonly ackDeadlineSeconds: number;
  /** Absent: a nacked message is redelivered at once. */
  readonly retryPolicy:
    | { readonly minimumBackoffMs: number; readonly maximumBackoffMs: number }
    | undefined;
  readonly deadLetter: { readonly topic: string; readonly maxDeliveryAttempts: number } | undefined;
  /** Absent for a pull subscription. */
  readonly pushEndpoint: string | undefined;
  readonly pushAuth:
    | { readonly serviceAccountEmail: string; readonly audience: string | undefined }
    | undefined;
  readonly exactlyOnce: boolean;
  /** A push without the envelope (`pushConfig.noWrapper`): no deliveryAttempt reaches it. */
  readonly unwrapped: boolean;
}

/**
 * A subscription as the admin API's REST form returns it, checked field by field: the reply
 * is external input. Durations come as `"10s"` or `"10.5s"`.
 */
export function subscriptionFacts(json: unknown): SubscriptionFacts {
  const object = (value: unknown, what: string): Record<string, unknown> => {
    if (value === undefined) return {};
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw new Error(`the subscription's ${what} is not an object`);
    }
    return value as Record<string, unknown>;
  };
  const string = (value: unknown, what: string): string | undefined => {
    if (value === undefined || value === "") return undefined;
    if (typeof value !== "string") throw new Error(`the subscription's ${what} is not a string`);
    return value;
  };
  const root = object(json, "answer");
  const name = string(root.name, "name");
  if (name === undefined) throw new Error("the answer has no subscription name");
  const retry =
    root.retryPolicy === undefined ? undefined : object(root.retryPolicy, "retryPolicy");
  const deadLetter = object(root.deadLetterPolicy, "deadLetterPolicy");
  const push = object(root.pushConfig, "pushConfig");
  const oidc = object(push.oidcToken, "pushConfig.oidcToken");
  const deadLetterTopic = string(deadLetter.deadLetterTopic, "deadLetterPolicy.deadLetterTopic");
  const email = string(oidc.serviceAccountEmail, "pushConfig.oidcToken.serviceAccountEmail");
  const pushEndpoint = string(push.pushEndpoint, "pushConfig.pushEndpoint");
  return {
    name,
    topic: string(root.topic, "topic"),
    // The API leaves out a field at its default: 10 s, and 5 dead-letter attempts.
    ackDeadlineSeconds: wholeNumber(root.ackDeadlineSeconds, "ackDeadlineSeconds") ?? 10,
    retryPolicy:
      retry === undefined
        ? undefined
        : {
            minimumBackoffMs:
              durationMs(retry.minimumBackoff, "retryPolicy.minimumBackoff") ??
              DEFAULT_MIN_BACKOFF_MS,
            maximumBackoffMs:
              durationMs(retry.maximumBackoff, "retryPolicy.maximumBackoff") ??
              DEFAULT_MAX_BACKOFF_MS,
          },
    deadLetter:
      deadLetterTopic === undefined
        ? undefined
        : {
            topic: deadLetterTopic,
            maxDeliveryAttempts:
              wholeNumber(deadLetter.maxDeliveryAttempts, "deadLetterPolicy.maxDeliveryAttempts") ??
              5,
          },
    pushEndpoint,
    pushAuth:
      email === undefined
        ? undefined
        : {
            serviceAccountEmail: email,
            audience: string(oidc.audience, "pushConfig.oidcToken.audience"),
          },
    exactlyOnce: root.enableExactlyOnceDelivery === true,
    unwrapped: push.noWrapper !== undefined && push.noWrapper !== null,
  };
}

function wholeNumber(value: unknown, what: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new Error(`the subscription's ${what} is not a whole number`);
  }
  return value;
}

function durationMs(value: unknown, what: string): number | undefined {
  if (value === undefined) return undefined;
  const match = typeof value === "string" ? /^(\d{1,12})(?:\.(\d{1,9}))?s$/.exec(value) : null;
  if (match === null) throw new Error(`the subscription's ${what} is not a duration`);
  const fraction = (match[2] ?? "").padEnd(3, "0").slice(0, 3);
  return Number(match[1]) * 1_000 + Number(fraction);
}
