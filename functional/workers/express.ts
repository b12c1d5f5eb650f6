/** An Express service (the Cloud Run shape): `idempotentHttp` behind express.json(). */
import express from "express";
import { idempotentHttp } from "gcp-pubsub-idempotency";
import { backend, keyOf, leaseMs, logger, onDuplicate, placeOrder } from "./guarded.js";

const app = express();
app.use(express.json({ limit: "1mb" }));
app.post(
  "/{*path}",
  idempotentHttp(
    {
      backend,
      leaseMs,
      heartbeat: true,
      logger,
      onDuplicate,
      key: ({ message }) => keyOf(message),
    },
    (message) => placeOrder(message),
  ),
);
app.listen(Number(process.env.PORT), "127.0.0.1");
