/**
 * A Cloud Functions (2nd gen) Pub/Sub function on functions-framework, guarded by a
 * DatastoreLock (Firestore in Datastore mode). A redelivery or a concurrent duplicate
 * skips the body; the function resolves (204, ack) or throws (500, nack).
 *
 *   gcloud functions deploy handle-order --gen2 --runtime=nodejs20 \
 *     --trigger-topic=orders --entry-point=handleOrder
 *
 * Add a TTL policy on the `expiresAt` property of the kind so done records are reaped.
 */
import { type CloudEvent, cloudEvent } from "@google-cloud/functions-framework";
import { idempotent, type LockBackend, parseCloudEvent } from "gcp-pubsub-idempotency";
import { DatastoreLock } from "gcp-pubsub-idempotency/datastore";

export interface Order {
  orderId: string;
}

export type SendOrder = (order: Order, idempotencyKey: string) => Promise<void>;

export function createHandler(backend: LockBackend, sendOrder: SendOrder) {
  // Key: the default, the Pub/Sub messageId in the event's data.message.
  return idempotent<CloudEvent<unknown>>({ backend, leaseMs: 5 * 60_000 }, async (event) => {
    const message = parseCloudEvent(event);
    const order = message.json<Order>();
    // Key your sink: the receiver de-duplicates a re-send after a crash on this key.
    await sendOrder(order, `order:${message.messageId}`);
  });
}

async function sendOverHttp(order: Order, idempotencyKey: string): Promise<void> {
  const response = await fetch(process.env.SUPPLIER_URL ?? "https://supplier.example.com/orders", {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
    body: JSON.stringify(order),
  });
  if (!response.ok) throw new Error(`supplier answered ${response.status}`);
}

// Constructing the backend performs no I/O; it connects on the first event.
export const handleOrder = createHandler(
  new DatastoreLock({ namespace: "orders", kind: "IdempotencyKey" }),
  sendOverHttp,
);
cloudEvent("handleOrder", handleOrder);
