/**
 * The "supplier": the downstream system the guarded body sends orders to. It counts every
 * arrival per order and de-duplicates on the Idempotency-Key header, the way a vendor API
 * with idempotency keys does: a re-send after a crash lands on the same key and is a no-op.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface Supplier {
  readonly url: string;
  /** Every POST per order id, re-sends included. */
  readonly arrivals: Map<string, number>;
  /** Orders accepted once their key was new: what the supplier actually holds. */
  readonly accepted: Map<string, number>;
  close(): Promise<void>;
}

export async function startSupplier(): Promise<Supplier> {
  const arrivals = new Map<string, number>();
  const accepted = new Map<string, number>();
  const keys = new Set<string>();
  const server = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const key = req.headers["idempotency-key"];
    let orderId: unknown;
    try {
      orderId = (JSON.parse(text) as { orderId?: unknown }).orderId;
    } catch {}
    if (typeof key !== "string" || typeof orderId !== "string") {
      res.statusCode = 400;
      res.end();
      return;
    }
    arrivals.set(orderId, (arrivals.get(orderId) ?? 0) + 1);
    if (!keys.has(key)) {
      keys.add(key);
      accepted.set(orderId, (accepted.get(orderId) ?? 0) + 1);
      res.statusCode = 201;
    } else {
      res.statusCode = 200; // already have it: same answer, no second order
    }
    res.end();
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/orders`,
    arrivals,
    accepted,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

/** Send one order, carrying the idempotency key we already hold ("key your sink"). */
export async function sendOrder(url: string, orderId: string, key: string): Promise<void> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ orderId }),
  });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`supplier answered ${response.status}`);
}
