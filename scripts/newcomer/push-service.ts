// The Cloud Run push service of the README's quick start, on InMemoryLock so it runs here:
// Express 5, no body parser on the route, push authentication when an audience is set.
import express from "express";
import { InMemoryLock, idempotentHttp, type LockBackend } from "gcp-pubsub-idempotency";

export interface Order {
  orderId: string;
}

export function createApp(options: {
  backend?: LockBackend;
  audience?: string | undefined;
  placed: Order[];
}): express.Express {
  const audience = options.audience;
  const app = express();
  app.post(
    "/pubsub/push",
    idempotentHttp(
      {
        backend: options.backend ?? new InMemoryLock(),
        leaseMs: 60_000,
        // Under exactOptionalPropertyTypes an option may still be given as undefined.
        auth: audience ? { audience } : undefined,
        key: ({ message }) => {
          const id = message.attributes.orderId ?? message.json<Partial<Order>>().orderId;
          return id === undefined ? undefined : `orders:${id}`;
        },
      },
      async (message) => {
        options.placed.push(message.json<Order>());
      },
    ),
  );
  return app;
}
