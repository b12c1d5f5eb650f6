/**
 * A functions-framework function, loaded by the framework's own CLI (`functions-framework
 * --source functional/workers/functions.ts --target orders`). FUNCTIONAL_SURFACE picks the
 * signature: `cloudevent` wraps the body with `idempotent` (the framework turns the raw push
 * body into a CloudEvent; contention is a 500), `http` with `idempotentHttp` (a 503). The
 * transactional sink's topic goes to the same surface in transaction mode.
 */
import { type CloudEvent, cloudEvent, http } from "@google-cloud/functions-framework";
import { idempotent, idempotentHttp, parseCloudEvent } from "gcp-pubsub-idempotency";
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

if (process.env.FUNCTIONAL_SURFACE === "http") {
  const key = ({ message }: { message: Parameters<typeof keyOf>[0] }) => keyOf(message);
  const supplied = idempotentHttp({ ...options, backend, key }, (message) => placeOrder(message));
  const transactional = idempotentHttp(
    { ...options, backend: transactionalBackend, transaction: true, key },
    (message, tx) => insertOrder(message, tx),
  );
  http("orders", (req, res) =>
    req.path.includes(TRANSACTION_TOPIC) ? transactional(req, res) : supplied(req, res),
  );
} else {
  const key = (event: Parameters<typeof parseCloudEvent>[0]) => keyOf(parseCloudEvent(event));
  const supplied = idempotent({ ...options, backend, key }, (event) =>
    placeOrder(parseCloudEvent(event)),
  );
  const transactional = idempotent(
    { ...options, backend: transactionalBackend, transaction: true, key },
    (event, tx) => insertOrder(parseCloudEvent(event), tx),
  );
  cloudEvent("orders", (event: CloudEvent<unknown>) =>
    String(event.source).includes(TRANSACTION_TOPIC) ? transactional(event) : supplied(event),
  );
}
