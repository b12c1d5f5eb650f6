/**
 * A functions-framework function, loaded by the framework's own CLI (`functions-framework
 * --source functional/workers/functions.ts --target orders`). FUNCTIONAL_SURFACE picks the
 * signature: `cloudevent` wraps the body with `idempotent` (the framework turns the raw push
 * body into a CloudEvent; contention is a 500), `http` with `idempotentHttp` (a 503). The
 * transactional sink's pushes go to the same surface in transaction mode.
 */
import { type CloudEvent, cloudEvent, http } from "@google-cloud/functions-framework";
import { idempotent, parseCloudEvent } from "gcp-pubsub-idempotency";
import {
  backend,
  gatewayOptions,
  insertOrder,
  isTransactionPush,
  keyOf,
  ordersHttp,
  placeOrder,
  transactionalBackend,
} from "./guarded.js";

if (process.env.FUNCTIONAL_SURFACE === "http") {
  http("orders", ordersHttp());
} else {
  const key = (event: CloudEvent<unknown>) => keyOf(parseCloudEvent(event));
  const supplied = idempotent({ ...gatewayOptions, backend, key }, (event) =>
    placeOrder(parseCloudEvent(event)),
  );
  const transactional = idempotent(
    { ...gatewayOptions, backend: transactionalBackend, transaction: true, key },
    (event, tx) => insertOrder(parseCloudEvent(event), tx),
  );
  cloudEvent("orders", (event: CloudEvent<unknown>) =>
    (isTransactionPush(String(event.source)) ? transactional : supplied)(event),
  );
}
