/**
 * A functions-framework function, loaded by the framework's own CLI (`functions-framework
 * --source functional/workers/functions.ts --target orders`). FUNCTIONAL_SURFACE picks the
 * signature: `cloudevent` wraps the body with `idempotent` (the framework turns the raw push
 * body into a CloudEvent; contention is a 500), `http` with `idempotentHttp` (a 503).
 */
import { cloudEvent, http } from "@google-cloud/functions-framework";
import { idempotent, idempotentHttp, parseCloudEvent } from "gcp-pubsub-idempotency";
import { backend, keyOf, leaseMs, logger, onDuplicate, placeOrder } from "./guarded.js";

const options = { backend, leaseMs, heartbeat: true, logger, onDuplicate } as const;

if (process.env.FUNCTIONAL_SURFACE === "http") {
  http(
    "orders",
    idempotentHttp({ ...options, key: ({ message }) => keyOf(message) }, (message) =>
      placeOrder(message),
    ),
  );
} else {
  cloudEvent(
    "orders",
    idempotent({ ...options, key: (event) => keyOf(parseCloudEvent(event)) }, (event) =>
      placeOrder(parseCloudEvent(event)),
    ),
  );
}
