/**
 * The "supplier": the downstream system the guarded body sends orders to. It counts every
 * arrival per order and de-duplicates on the Idempotency-Key header, the way a vendor API
 * with idempotency keys does: a re-send after a crash lands on the same key and is a no-op.
 *
 * Shared by the demo and the functional suite (functional/), which also uses the optional
 * behaviours of an order: `holdMs` (answer late), `failFirst` (answer 503 to the first n
 * arrivals of a key: a transient outage) and `entity` (count overlapping calls per entity).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface Supplier {
  readonly url: string;
  /** Every POST per order id, re-sends included. */
  readonly arrivals: Map<string, number>;
  /** Orders accepted once their key was new: what the supplier actually holds. */
  readonly accepted: Map<string, number>;
  /** Per order, arrivals answered "already have it": the re-sends the key de-duplicated. */
  readonly deduplicated: Map<string, number>;
  /** Per entity, how many calls arrived while another call for it was still in flight. */
  readonly overlaps: Map<string, number>;
  close(): Promise<void>;
}

/** What a POST to the supplier carries besides its Idempotency-Key header. */
export interface OrderRequest {
  readonly orderId: string;
  /** Hold the answer this long (the entity counts as busy meanwhile). */
  readonly holdMs?: number;
  /** Answer 503, without accepting, to the first n arrivals of this key. */
  readonly failFirst?: number;
  /** Calls for one entity must never overlap; the supplier counts those that do. */
  readonly entity?: string;
}

function parseOrder(text: string): OrderRequest | undefined {
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    if (typeof body.orderId !== "string") return undefined;
    const count = (v: unknown) => (typeof v === "number" && v > 0 ? v : undefined);
    const holdMs = count(body.holdMs);
    const failFirst = count(body.failFirst);
    return {
      orderId: body.orderId,
      ...(holdMs === undefined ? {} : { holdMs }),
      ...(failFirst === undefined ? {} : { failFirst }),
      ...(typeof body.entity === "string" ? { entity: body.entity } : {}),
    };
  } catch {
    return undefined;
  }
}

export async function startSupplier(): Promise<Supplier> {
  const arrivals = new Map<string, number>();
  const accepted = new Map<string, number>();
  const overlaps = new Map<string, number>();
  const deduplicated = new Map<string, number>();
  const busy = new Map<string, number>();
  const keys = new Set<string>();
  const arrivalsByKey = new Map<string, number>();
  const server = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    if (req.method === "GET") {
      // The counts, for a caller in another process.
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          arrivals: Object.fromEntries(arrivals),
          accepted: Object.fromEntries(accepted),
          deduplicated: Object.fromEntries(deduplicated),
          overlaps: Object.fromEntries(overlaps),
        }),
      );
      return;
    }
    const key = req.headers["idempotency-key"];
    const order = parseOrder(text);
    if (typeof key !== "string" || order === undefined) {
      res.statusCode = 400;
      res.end();
      return;
    }
    const { orderId, entity } = order;
    arrivals.set(orderId, (arrivals.get(orderId) ?? 0) + 1);
    const nth = (arrivalsByKey.get(key) ?? 0) + 1;
    arrivalsByKey.set(key, nth);
    if (entity !== undefined) {
      const inFlight = (busy.get(entity) ?? 0) + 1;
      busy.set(entity, inFlight);
      if (inFlight > 1) overlaps.set(entity, (overlaps.get(entity) ?? 0) + 1);
    }
    try {
      if (order.holdMs !== undefined) await new Promise((r) => setTimeout(r, order.holdMs));
    } finally {
      if (entity !== undefined) busy.set(entity, (busy.get(entity) ?? 1) - 1);
    }
    if (order.failFirst !== undefined && nth <= order.failFirst) {
      res.statusCode = 503; // a transient outage: nothing accepted
    } else if (!keys.has(key)) {
      keys.add(key);
      accepted.set(orderId, (accepted.get(orderId) ?? 0) + 1);
      res.statusCode = 201;
    } else {
      deduplicated.set(orderId, (deduplicated.get(orderId) ?? 0) + 1);
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
    deduplicated,
    overlaps,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

/** Send one order, carrying the idempotency key we already hold ("key your sink"). */
export async function sendOrder(
  url: string,
  orderId: string,
  key: string,
  behaviour: Omit<OrderRequest, "orderId"> = {},
): Promise<void> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ ...behaviour, orderId }),
  });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`supplier answered ${response.status}`);
}
