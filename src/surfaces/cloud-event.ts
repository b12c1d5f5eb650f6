// The CloudEvent surface: a functions-framework `cloudEvent` function, whose only answers
// are resolve (204, ack) and reject (500, nack).
import { heldError } from "../core/engine/outcome.js";
import { InvalidKey, PayloadMismatch, UnkeyedMessage } from "../core/errors.js";
import type { RequestTimeoutOptions } from "./deadline.js";
import { acked } from "./delivery-outcome.js";
import { cloudEventKey } from "./formats/default-keys.js";
import { isObject, readQuietly } from "./formats/fields.js";
import {
  type CloudEventLike,
  cloudEventDeliveryAttempt,
  cloudEventMessageId,
  MESSAGE_PUBLISHED_TYPE,
  parseCloudEvent,
} from "./formats/pubsub-cloud-event.js";
import {
  buildGateway,
  type Delivery,
  type GatewayOptions,
  type SurfaceSpec,
  type TransactionalGatewayOptions,
} from "./gateway.js";
import { deliver } from "./pipeline.js";

// The plain overload comes last: when no overload matches, TypeScript (7 in particular)
// reports the last one, and a misspelt option should read as itself ("'lease' does not
// exist … Did you mean 'leaseMs'?"), not as a backend missing completeInTransaction.
/**
 * Transaction mode (`transaction: true`, see {@link TransactionalGatewayOptions}): the
 * handler gets the store's transaction second, and the event's DONE commits in it with the
 * handler's writes. A failed commit rejects (500, nack); the redelivery repeats nothing.
 *
 * @example
 * ```ts
 * import { cloudEvent } from "@google-cloud/functions-framework";
 * import pg from "pg";
 * import { idempotent, parseCloudEvent } from "gcp-pubsub-idempotency";
 * import { SqlLock } from "gcp-pubsub-idempotency/sql";
 *
 * const backend = new SqlLock({ client: new pg.Pool(), table: "app.idempotency_records" });
 * cloudEvent("orders", idempotent({ backend, transaction: true }, async (event, tx) => {
 *   await tx.query("INSERT INTO app.orders (body) VALUES ($1)", [parseCloudEvent(event).text()]);
 * }));
 * ```
 */
export function idempotent<E extends CloudEventLike = CloudEventLike, Tx = unknown>(
  options: TransactionalGatewayOptions<GatewayOptions<E> & RequestTimeoutOptions, Tx>,
  handler: (event: E, tx: Tx, signal: AbortSignal) => unknown,
): (event: E) => Promise<void>;
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
): (event: E) => Promise<void>;
export function idempotent<E extends CloudEventLike, Tx>(
  options:
    | (GatewayOptions<E> & RequestTimeoutOptions)
    | TransactionalGatewayOptions<GatewayOptions<E> & RequestTimeoutOptions, Tx>,
  handler:
    | ((event: E, signal: AbortSignal) => unknown)
    | ((event: E, tx: Tx, signal: AbortSignal) => unknown),
): (event: E) => Promise<void> {
  const gateway = buildGateway(
    CLOUD_EVENT as SurfaceSpec<CloudEventDelivery<E>, E>,
    options,
    handler,
  );
  return async (event) => {
    const outcome = await deliver(gateway, {
      event,
      pubsub: isPubSubEvent(event),
      messageId: eventMessageId(event),
      subscription: eventSubscription(event),
      deliveryAttempt: cloudEventDeliveryAttempt(event),
    });
    if (acked(outcome)) return;
    switch (outcome.kind) {
      case "held":
        // No stack is captured for an InProgress: functions-framework prints one line.
        throw heldError(outcome);
      case "payload_mismatch":
        throw withoutStack(new PayloadMismatch(outcome.key));
      case "unkeyed":
        // functions-framework prints err.stack for every throw; a refusal is routine, so keep
        // that to the message's one line instead of a stack trace.
        throw withoutStack(new UnkeyedMessage(outcome.reason));
      case "invalid_key":
        throw withoutStack(new InvalidKey(outcome.reason));
      case "failed":
        // functions-framework logs it; wrapped, a falsy throw is a 500 there, not a 204.
        throw outcome.error;
    }
  };
}

/** One CloudEvent as the pipeline sees it. */
interface CloudEventDelivery<E> extends Delivery {
  readonly event: E;
  /** A Pub/Sub message (or an event that names no type), for the reasons. */
  readonly pubsub: boolean;
}

type PlainHandler = (event: unknown, signal: AbortSignal) => unknown;
type HandlerInTransaction = (event: unknown, tx: unknown, signal: AbortSignal) => unknown;

const CLOUD_EVENT: SurfaceSpec<CloudEventDelivery<unknown>, unknown> = {
  name: "idempotent",
  request: true,
  signalAt: 1,
  transactionSignalAt: 2,
  keyInput: (d) => d.event,
  defaultKey: (d) => cloudEventKey(d.event),
  noDefaultKey: (d) => (d.pubsub ? NO_MESSAGE_ID : NO_SOURCE_ID),
  readAs: (d) => (d.pubsub ? "a Pub/Sub CloudEvent" : "a CloudEvent that is not a Pub/Sub message"),
  payload: (d) => parseCloudEvent(d.event),
  traceparents: (d) => [readQuietly(d.event, "traceparent")],
  call: (handler, d, signal) => (handler as PlainHandler)(d.event, signal),
  callInTransaction: (handler, d, tx, signal) =>
    (handler as HandlerInTransaction)(d.event, tx, signal),
};

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

const NO_MESSAGE_ID =
  "the Pub/Sub CloudEvent carries no messageId (data.message.messageId); give options.key to key it otherwise";
const NO_SOURCE_ID =
  "the CloudEvent has no usable source and id (each a non-empty CloudEvents string); give options.key to key it otherwise";

/** Whether the event is a Pub/Sub message (or names no type); total, for the reasons. */
function isPubSubEvent(event: unknown): boolean {
  const type = readQuietly(event, "type");
  return type === undefined || type === MESSAGE_PUBLISHED_TYPE;
}

/** The messageId the log lines name: the Pub/Sub one, else the CloudEvent id. Total. */
function eventMessageId(event: unknown): string | undefined {
  try {
    return cloudEventMessageId(event) ?? stringOrUndefined(readQuietly(event, "id"));
  } catch {
    return undefined; // a hostile getter: the line names no message, the delivery decides
  }
}

/** `data.subscription` of a Pub/Sub CloudEvent whose data is an object. Total. */
function eventSubscription(event: unknown): string | undefined {
  const data = readQuietly(event, "data");
  return isObject(data) ? stringOrUndefined(readQuietly(data, "subscription")) : undefined;
}

function withoutStack(error: Error): Error {
  error.stack = `${error.name}: ${error.message}`;
  return error;
}
