/**
 * A pull subscriber (@google-cloud/pubsub) whose side effect runs once per message.
 *
 * Retry policy: `nack()` makes Pub/Sub redeliver at once unless the subscription has a
 * retry policy, so a contention nack (the key is held by another worker) would spin
 * against the holder until its lease ends. Give the subscription exponential backoff and
 * a dead-letter topic; `deadLetter` below names its max attempts, so a copy on its last
 * attempts waits for the holder instead of using them up (docs/pull.md):
 *
 *   gcloud pubsub subscriptions create orders-pull --topic=orders \
 *     --min-retry-delay=10s --max-retry-delay=600s \
 *     --dead-letter-topic=orders-dead --max-delivery-attempts=10
 *
 *   PUBSUB_SUBSCRIPTION=orders-pull node --import tsx \
 *     --import ./scripts/text-loader.mjs examples/pull_worker.ts
 */
import { pathToFileURL } from "node:url";
import { type Message, PubSub } from "@google-cloud/pubsub";
import {
  idempotentMessage,
  type LockBackend,
  type PubSubMessageLike,
} from "gcp-pubsub-idempotency";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
import { Redis } from "ioredis";

export type Work = (payload: unknown, messageId: string) => Promise<void>;

/** The claim's lease. */
export const LEASE_MS = 5 * 60_000;
/** The body's slowest run, as measured in production. */
export const LONGEST_RUN_MS = 10_000;
/**
 * How many messages the client hands the listener at once. At worst they queue behind one
 * resource, so the last finishes MAX_MESSAGES × LONGEST_RUN_MS after its claim: 20 × 10 s =
 * 200 s, inside the 300 s lease and the client's 60-minute message lease (maxExtensionTime).
 * `doctor --lease 5m --max-run 10s --max-messages 20` checks it.
 */
export const MAX_MESSAGES = 20;
/** The subscription's --max-delivery-attempts, as the gcloud line above sets it. */
export const MAX_DELIVERY_ATTEMPTS = 10;

/** The `message` listener: ack on success or duplicate, nack otherwise; never rejects. */
export function createListener<M extends PubSubMessageLike = Message>(
  backend: LockBackend,
  work: Work,
): (message: M) => Promise<void> {
  return idempotentMessage<M>(
    // Key: the default, the messageId. waitMs lets a concurrent copy wait out a short body
    // instead of nacking; only a long-held key becomes a nack (and then the retry policy).
    {
      backend,
      leaseMs: LEASE_MS,
      waitMs: 1_000,
      deadLetter: {
        maxDeliveryAttempts: MAX_DELIVERY_ATTEMPTS,
        // The delivery Pub/Sub dead-letters, before its nack: observe it, e.g. for an alert.
        onExhausted: (message, reason) =>
          console.error(
            JSON.stringify({
              severity: "ERROR",
              message: "dead-lettered",
              id: message.id,
              why: reason.message,
            }),
          ),
      },
    },
    async (message) => {
      const text = Buffer.from(message.data ?? "").toString("utf8");
      await work(JSON.parse(text), message.id);
    },
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const client = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
  const backend = new RedisLock({ client, prefix: "pull:" });
  const listener = createListener<Message>(backend, async (payload, id) => {
    console.log(`processing ${id}`, payload);
  });
  const subscription = new PubSub().subscription(process.env.PUBSUB_SUBSCRIPTION ?? "orders-pull", {
    // Bound the work in flight so its last message still finishes inside its claim; without
    // allowExcessMessages: false a batch may overshoot maxMessages.
    flowControl: { maxMessages: MAX_MESSAGES, allowExcessMessages: false },
  });
  subscription.on("message", listener);
  subscription.on("error", (error) => console.error(error));
  process.on("SIGTERM", () => void subscription.close().then(() => client.quit()));
}
