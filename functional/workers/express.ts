/**
 * An Express service (the Cloud Run shape): `idempotentHttp` behind express.json(). The
 * transactional sink's topic goes to the same surface in transaction mode.
 */
import express from "express";
import { idempotentHttp } from "gcp-pubsub-idempotency";
import {
  backend,
  insertOrder,
  keyOf,
  leaseMs,
  logger,
  onDuplicate,
  placeOrder,
  TRANSACTION_TOPIC,
  transactionalBackend,
} from "./guarded.js";

const options = { leaseMs, heartbeat: true, logger, onDuplicate } as const;
const supplied = idempotentHttp(
  { ...options, backend, key: ({ message }) => keyOf(message) },
  (message) => placeOrder(message),
);
const transactional = idempotentHttp(
  {
    ...options,
    backend: transactionalBackend,
    transaction: true,
    key: ({ message }) => keyOf(message),
  },
  (message, tx) => insertOrder(message, tx),
);

const app = express();
app.use(express.json({ limit: "1mb" }));
app.post("/{*path}", (req, res) =>
  req.path.includes(TRANSACTION_TOPIC) ? transactional(req, res) : supplied(req, res),
);
app.listen(Number(process.env.PORT), "127.0.0.1");
