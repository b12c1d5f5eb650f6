// The CloudEvent surface: a functions-framework `cloudEvent` function, whose only answers
// are resolve (204, ack) and reject (500, nack).
import { cloudEventKey } from "./cloud-event-attributes.js";
import type { RequestTimeoutOptions } from "./deadline.js";
import { type CloudEventLike, cloudEventDeliveryAttempt } from "./envelope.js";
import { deliver, type GatewayOptions, resolveGatewayOptions } from "./pipeline.js";

/**
 * Wrap a functions-framework `cloudEvent` function. It resolves on success or a
 * duplicate (204, ack) and rejects otherwise (500, nack): a `cloudEvent` function cannot
 * pick its status, so contention is a 500 here — use {@link idempotentHttp} for a 503.
 *
 * The default key is the Pub/Sub messageId of a `messagePublished` event, and the `source`
 * and `id` of any other event (Cloud Storage, Audit Logs, custom): {@link cloudEventKey}.
 *
 * The handler's `signal` aborts when a heartbeat finds the claim taken over. A
 * `cloudEvent` function never sees its request, so a client that leaves cannot abort it;
 * the request timeout (`requestTimeoutMs`, or the runtime's) still bounds `waitMs`.
 *
 * @example
 * ```ts
 * import { cloudEvent } from "@google-cloud/functions-framework";
 * import { idempotent, InMemoryLock, parseCloudEvent } from "gcp-pubsub-idempotency";
 *
 * declare function handle(order: unknown): Promise<void>;
 * const backend = new InMemoryLock(); // DatastoreLock in production
 * cloudEvent("orders", idempotent({ backend }, async (event) => handle(parseCloudEvent(event).json())));
 * ```
 */
export function idempotent<E extends CloudEventLike = CloudEventLike>(
  options: GatewayOptions<E> & RequestTimeoutOptions,
  handler: (event: E, signal: AbortSignal) => unknown,
): (event: E) => Promise<void> {
  const gateway = resolveGatewayOptions<E>("idempotent", options, handler, {
    signalAt: 1,
    request: true,
  });
  return async (event) => {
    const outcome = await deliver(gateway, {
      input: event,
      defaultKey: () => cloudEventKey(event),
      run: (signal) => handler(event, signal),
      deliveryAttempt: cloudEventDeliveryAttempt(event),
    });
    switch (outcome.kind) {
      case "ran":
      case "duplicate":
        return;
      case "in_progress":
      case "unkeyed":
      case "invalid_key":
        // functions-framework prints err.stack for every throw; contention is routine, so
        // keep that to the message's one line instead of a stack trace.
        trimStack(outcome.error);
        throw outcome.error;
      case "failed":
        // functions-framework logs it; wrapped, a falsy throw is a 500 there, not a 204.
        throw outcome.error;
    }
  };
}

function trimStack(error: Error): void {
  try {
    error.stack = `${error.name}: ${error.message}`;
  } catch {
    // A non-writable stack keeps its lines; the gateway's own warning is still one line.
  }
}
