/**
 * A Cloud Run push service (Express): a Pub/Sub push subscription POSTs each message
 * here. The key is the business key (the `orderId` attribute), so a republished order is
 * caught as well as a redelivered message. 204 acks; 503 (held elsewhere) and 500 nack.
 *
 *   REDIS_URL=redis://10.0.0.3:6379 PORT=8080 node --import tsx \
 *     --import ./scripts/text-loader.mjs examples/cloud_run_worker.ts
 */
import { pathToFileURL } from "node:url";
import express from "express";
import { idempotentHttp, type LockBackend, type ParsedMessage } from "gcp-pubsub-idempotency";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
import { Redis } from "ioredis";

export interface Order {
  orderId: string;
  items?: unknown[];
}

/** Send the order on; carry the key so the receiver can de-duplicate a crash re-send. */
export type Fulfil = (order: Order, idempotencyKey: string) => Promise<void>;

export function createApp(backend: LockBackend, fulfil: Fulfil): express.Express {
  const app = express();
  // A body parser is optional (the gateway reads an unparsed body itself); one that is mounted
  // must admit the largest push: 10 MB of data is about 13.4 MB as base64 inside the JSON.
  app.use(express.json({ limit: "16mb" }));
  app.post(
    "/pubsub/push",
    idempotentHttp(
      {
        backend,
        leaseMs: 5 * 60_000, // longer than the slowest fulfil (sizing rule 1)
        waitMs: 2_000, // a concurrent duplicate usually just waits for the winner: no 503
        key: ({ message }) => {
          const id = message.attributes.orderId;
          return id ? `order:${id}` : undefined; // no attribute: 400, never unguarded
        },
      },
      async (message: ParsedMessage) => {
        const order = message.json<Order>();
        await fulfil(order, `order:${order.orderId}`);
      },
    ),
  );
  app.get("/healthz", (_req, res) => {
    res.send("ok");
  });
  return app;
}

async function fulfilOverHttp(order: Order, idempotencyKey: string): Promise<void> {
  const url = process.env.SUPPLIER_URL ?? "https://supplier.example.com/orders";
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
    body: JSON.stringify(order),
  });
  if (!response.ok) throw new Error(`supplier answered ${response.status}`); // nack, retried
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const client = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
  const app = createApp(new RedisLock({ client, prefix: "orders:" }), fulfilOverHttp);
  const port = Number(process.env.PORT ?? 8080);
  app.listen(port, () => console.log(`listening on :${port}`));
}
