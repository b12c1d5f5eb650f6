/**
 * A functions-framework function, loaded by the framework's own CLI (`functions-framework
 * --source functional/workers/functions.ts --target orders`). FUNCTIONAL_SURFACE picks the
 * signature: `cloudevent` wraps the body with `idempotent` (the framework turns the raw push
 * body into a CloudEvent; contention is a 500), `http` with `idempotentHttp` (a 503). The
 * transactional sink's pushes go to the same surface in transaction mode, the step storm's to
 * its three-step handler (./steps.ts).
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
import { isStepsPush, stepsCloudEvent, stepsHttp } from "./steps.js";

if (process.env.FUNCTIONAL_SURFACE === "http") {
  const orders = ordersHttp();
  const steps = stepsHttp();
  http("orders", (req, res) => (isStepsPush(req.path) ? steps : orders)(req, res));
} else {
  const key = (event: CloudEvent<unknown>) => keyOf(parseCloudEvent(event));
  const supplied = idempotent({ ...gatewayOptions, backend, key }, (event) =>
    placeOrder(parseCloudEvent(event)),
  );
  const transactional = idempotent(
    { ...gatewayOptions, backend: transactionalBackend, transaction: true, key },
    (event, tx) => insertOrder(parseCloudEvent(event), tx),
  );
  const steps = stepsCloudEvent();
  cloudEvent("orders", (event: CloudEvent<unknown>) => {
    const source = String(event.source);
    if (isStepsPush(source)) return steps(event);
    return (isTransactionPush(source) ? transactional : supplied)(event);
  });
}
