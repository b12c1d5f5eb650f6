// The quick start end to end, as a user's own node:test file: each order pushed three times (two
// at once), and after a 503 or 500 again, by the package's own simulator.
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";
import { createApp, type Order } from "./push-service.js";

/** The service on a free port for the length of `body`, which gets its base URL. */
async function serving(placed: Order[], body: (base: string) => Promise<void>): Promise<void> {
  const server = createApp({ placed }).listen(0, "127.0.0.1");
  await new Promise<void>((done) => server.once("listening", () => done()));
  try {
    await body(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.close();
  }
}

test("each order placed once, every message acked", async () => {
  const placed: Order[] = [];
  await serving(placed, async (base) => {
    const report = await simulatePushDeliveries({
      url: `${base}/pubsub/push`,
      messages: [{ orderId: "o-1" }, { orderId: "o-2" }, { orderId: "o-3" }],
      copies: 3,
    });
    assert.deepEqual(report.unacked, []);
    assert.deepEqual(placed.map((o) => o.orderId).sort(), ["o-1", "o-2", "o-3"]);
  });
});

test("a push to the wrong path is not acked", async () => {
  const placed: Order[] = [];
  await serving(placed, async (base) => {
    const report = await simulatePushDeliveries({
      url: `${base}/push`,
      messages: [{ orderId: "o-9" }],
      copies: 1,
      maxRedeliveries: 0,
    });
    assert.equal(report.unacked.length, 1);
    assert.deepEqual(placed, []);
  });
});
