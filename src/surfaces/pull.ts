// The pull surface: a `subscription.on("message")` listener, which settles each message with
// ack() or nack() (confirmed where the subscription has exactly-once delivery: pull-settle.ts)
// and, since the emitter ignores promises, never rejects.
import { deliveryFields, errorText, type MessageRef } from "../core/logger.js";
import { PUBSUB_TRACEPARENT_ATTRIBUTE } from "../core/trace-context.js";
import { booleanOption, readOptions } from "../core/validate.js";
import { logFailure } from "./delivery-outcome.js";
import type { PublishedPayload } from "./fingerprint.js";
import { readQuietly } from "./formats/fields.js";
import type { PubSubMessageLike } from "./formats/pull-message.js";
import {
  buildGateway,
  type Delivery,
  type GatewayOptions,
  type SurfaceSpec,
  type TransactionalGatewayOptions,
} from "./gateway.js";
import { deliver } from "./pipeline.js";
import { type SettleMode, settleMode, settlePulled } from "./pull-settle.js";

/** What {@link idempotentMessage} takes besides the options of every surface. */
const PULL_OPTIONS = ["exactlyOnce"] as const;

/**
 * `idempotentMessage` options: the gateway's, and how the listener acks.
 *
 * @example
 * ```ts
 * import { PubSub } from "@google-cloud/pubsub";
 * import { idempotentMessage, InMemoryLock, type PullGatewayOptions } from "gcp-pubsub-idempotency";
 *
 * // Refuse to settle a message without confirmation (a subscription with exactly-once delivery).
 * const options: PullGatewayOptions = { backend: new InMemoryLock(), exactlyOnce: true };
 * new PubSub().subscription("orders-worker").on("message", idempotentMessage(options, async () => {}));
 * ```
 */
export type PullGatewayOptions<M extends PubSubMessageLike = PubSubMessageLike> =
  GatewayOptions<M> & {
    /**
     * How the listener learns whether Pub/Sub took its ack. Unset (the default): through the
     * message's `ackWithResponse()` / `nackWithResponse()` whenever it has them, which on a
     * subscription with exactly-once delivery wait for Pub/Sub's answer (a refused ack is the
     * `ack_failed` outcome) and on any other ack or nack at once, as `@google-cloud/pubsub`
     * decides from the subscription. `true`: the same, and a message without those methods is
     * an ERROR line; `false`: `ack()` / `nack()` only, never waiting for an answer.
     */
    exactlyOnce?: boolean | undefined;
  };

/** The message of a line written before any of its fields could be read. */
const NOTHING_READ: MessageRef = {};

// The plain overload comes last: when no overload matches, TypeScript (7 in particular)
// reports the last one, and a misspelt option should read as itself ("'lease' does not
// exist … Did you mean 'leaseMs'?"), not as a backend missing completeInTransaction.
/**
 * Transaction mode (`transaction: true`, see {@link TransactionalGatewayOptions}): the
 * handler gets the store's transaction second, and the message's DONE commits in it with
 * the handler's writes. A failed commit nacks; the redelivery repeats nothing.
 *
 * @example
 * ```ts
 * import { Firestore } from "@google-cloud/firestore";
 * import { PubSub } from "@google-cloud/pubsub";
 * import { idempotentMessage } from "gcp-pubsub-idempotency";
 * import { FirestoreLock } from "gcp-pubsub-idempotency/firestore";
 *
 * const firestore = new Firestore();
 * const backend = new FirestoreLock({ firestore });
 * const subscription = new PubSub().subscription("orders-worker");
 * subscription.on("message", idempotentMessage({ backend, transaction: true }, async (message, tx) => {
 *   tx.create(firestore.collection("orders").doc(), { body: message.data.toString() });
 * }));
 * ```
 */
export function idempotentMessage<M extends PubSubMessageLike = PubSubMessageLike, Tx = unknown>(
  options: TransactionalGatewayOptions<PullGatewayOptions<M>, Tx>,
  handler: (message: M, tx: Tx, signal: AbortSignal) => unknown,
): (message: M) => Promise<void>;
/**
 * Wrap a pull subscriber's `message` listener. Acks on success or duplicate; nacks on
 * contention, a handler error or no key. Never rejects: `subscription.on("message")`
 * ignores promises, so every failure is logged instead. On a subscription with exactly-once
 * delivery it acks with `ackWithResponse()`: an ack Pub/Sub refuses is logged as
 * `ack_failed` with the AckError's code, and its redelivery is a duplicate (the `exactlyOnce`
 * option of {@link PullGatewayOptions}).
 *
 * Note: `nack()` redelivers at once unless the subscription has a retry policy; give
 * it one so contention does not spin.
 *
 * The handler's `signal` aborts when a heartbeat finds the claim taken over. A pulled
 * message has no request and no client to leave, and `Message` exposes no ack deadline
 * (the client library extends it on its own, up to `flowControl.maxExtensionMinutes`):
 * the lease, or the heartbeat, is the only deadline here.
 *
 * @example
 * ```ts
 * import { PubSub } from "@google-cloud/pubsub";
 * import { idempotentMessage, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * declare function handle(data: Buffer): Promise<void>;
 * const backend = new InMemoryLock(); // a shared backend when several workers pull
 * const subscription = new PubSub().subscription("orders-worker");
 * subscription.on("message", idempotentMessage({ backend }, async (message) => handle(message.data)));
 * ```
 */
export function idempotentMessage<M extends PubSubMessageLike = PubSubMessageLike>(
  options: PullGatewayOptions<M>,
  handler: (message: M, signal: AbortSignal) => unknown,
): (message: M) => Promise<void>;
export function idempotentMessage<M extends PubSubMessageLike, Tx>(
  options: PullGatewayOptions<M> | TransactionalGatewayOptions<PullGatewayOptions<M>, Tx>,
  handler:
    | ((message: M, signal: AbortSignal) => unknown)
    | ((message: M, tx: Tx, signal: AbortSignal) => unknown),
): (message: M) => Promise<void> {
  const gateway = buildGateway(PULL as SurfaceSpec<PullDelivery<M>, M>, options, handler);
  const own = readOptions("idempotentMessage()", options, false, PULL_OPTIONS, false);
  const mode = settleMode(booleanOption("options.exactlyOnce", own.exactlyOnce));
  const { logger } = gateway;
  return async (message) => {
    // A pulled Message does not name its subscription: the lines carry id and attempt.
    let about: MessageRef = NOTHING_READ;
    try {
      const id = message.id;
      const attempt = message.deliveryAttempt;
      const delivery: PullDelivery<M> = {
        message,
        id,
        messageId: typeof id === "string" ? id : undefined,
        deliveryAttempt:
          typeof attempt === "number" && Number.isInteger(attempt) ? attempt : undefined,
        mode,
        startedAt: receivedAt(message),
      };
      about = delivery;
      // The spec's settle acks or nacks it, inside the delivery's span.
      await deliver(gateway, delivery);
      return;
    } catch (error) {
      // A message whose fields cannot be read: nack it, never leave it leased.
      logger.error(
        "reading the message failed; nacking",
        deliveryFields("failed", undefined, about, errorText(error)),
      );
      const unread = { kind: "failed", key: undefined, error, inBody: false } as const;
      await settlePulled(message, unread, mode, about, logger);
    }
  };
}

/** One pulled message as the pipeline sees it. */
interface PullDelivery<M> extends Delivery {
  readonly message: M;
  /** `message.id` as read, for the reason when it is no usable id. */
  readonly id: unknown;
  /** How to ack or nack it (the `exactlyOnce` option). */
  readonly mode: SettleMode;
}

type PlainHandler = (message: unknown, signal: AbortSignal) => unknown;
type HandlerInTransaction = (message: unknown, tx: unknown, signal: AbortSignal) => unknown;

const PULL: SurfaceSpec<PullDelivery<unknown>, unknown> = {
  name: "idempotentMessage",
  request: false,
  signalAt: 1,
  transactionSignalAt: 2,
  keyInput: (d) => d.message,
  defaultKey: (d) => d.messageId,
  noDefaultKey: (d) =>
    `the pull message has no id (message.id is ${typeof d.id === "string" ? '""' : typeof d.id}); give options.key to key it otherwise`,
  readAs: () => "a pull message",
  payload: (d) => pullPayload(d.message),
  traceparents: (d) => [
    readQuietly(readQuietly(d.message, "attributes"), PUBSUB_TRACEPARENT_ATTRIBUTE),
  ],
  call: (handler, d, signal) => (handler as PlainHandler)(d.message, signal),
  callInTransaction: (handler, d, tx, signal) =>
    (handler as HandlerInTransaction)(d.message, tx, signal),
  own: PULL_OPTIONS,
  settle: (d, outcome, logger) => {
    if (outcome.kind === "failed") logFailure(logger, outcome, d);
    return settlePulled(d.message, outcome, d.mode, d, logger);
  },
};

/**
 * When the client received the message (`Message.received`, epoch ms), where its lease began;
 * now for a message without a plausible one. Only deadLetter's wait reads it.
 */
function receivedAt(message: unknown): number {
  const now = Date.now();
  const received = readQuietly(message, "received");
  return typeof received === "number" && received > 0 && received <= now ? received : now;
}

/** What `fingerprint: true` hashes of a pulled message: its data, attributes and ordering key. */
function pullPayload(message: unknown): PublishedPayload {
  const data = readQuietly(message, "data");
  const attributes = readQuietly(message, "attributes");
  const orderingKey = readQuietly(message, "orderingKey");
  return {
    data: data instanceof Uint8Array ? data : Buffer.from(typeof data === "string" ? data : ""),
    attributes: stringRecord(attributes),
    orderingKey: typeof orderingKey === "string" ? orderingKey : undefined,
  };
}

/** The string-valued entries of an attributes object; anything else reads as none. */
function stringRecord(value: unknown): Record<string, string> {
  const record: Record<string, string> = {};
  if (value === null || typeof value !== "object") return record;
  for (const [name, entry] of Object.entries(value)) {
    if (typeof entry === "string") record[name] = entry;
  }
  return record;
}
