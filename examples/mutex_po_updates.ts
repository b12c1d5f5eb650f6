/**
 * Two verbs on two keys. Status updates for a purchase order must each be applied, but
 * never two at once for one PO (the apply is a read-modify-write). Pub/Sub may also
 * redeliver one update: that copy must vanish.
 *
 * - idempotentHttp, keyed on the messageId: transport de-duplication (a redelivery is a 204).
 * - mutex(`po:<id>`): per-PO mutual exclusion; it releases and never completes, so every
 *   distinct update still runs. lock() here would be a bug: the first update would mark
 *   the PO done and drop every later one as a duplicate.
 *
 * A mutex held by another update throws InProgress inside the handler: the delivery is
 * nacked (500), its messageId claim released, and Pub/Sub redelivers it later.
 *
 *   PORT=8080 node --import tsx --import ./scripts/text-loader.mjs examples/mutex_po_updates.ts
 */
import { createServer, type RequestListener } from "node:http";
import { pathToFileURL } from "node:url";
import {
  InMemoryLock,
  idempotentHttp,
  type LockBackend,
  mutex,
  type ParsedMessage,
} from "gcp-pubsub-idempotency";

export interface PoUpdate {
  poId: string;
  status: string;
  seq: number;
}

/** Where PO state lives: read, change, write — the sequence the mutex keeps whole. */
export interface PoStore {
  read(poId: string): Promise<{ history: string[] }>;
  write(poId: string, state: { history: string[] }): Promise<void>;
}

export function createHandler(backend: LockBackend, store: PoStore): RequestListener {
  const handler = idempotentHttp({ backend, leaseMs: 60_000 }, async (message: ParsedMessage) => {
    const update = message.json<PoUpdate>();
    // waitMs: queue briefly behind the update in progress before giving up with a nack.
    await mutex(`po:${update.poId}`, { backend, leaseMs: 30_000, waitMs: 2_000 }, async () => {
      const state = await store.read(update.poId);
      state.history.push(`${update.seq}:${update.status}`);
      await store.write(update.poId, state);
    });
  });
  return (req, res) => void handler(req, res);
}

/** A toy store with a real await between read and write, so interleaving would show. */
export function memoryStore(): PoStore & { data: Map<string, string[]> } {
  const data = new Map<string, string[]>();
  const tick = () => new Promise((done) => setTimeout(done, 2));
  return {
    data,
    async read(poId) {
      await tick();
      return { history: [...(data.get(poId) ?? [])] };
    },
    async write(poId, state) {
      await tick();
      data.set(poId, state.history);
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // One process here; across instances, pass a shared backend (RedisLock, DatastoreLock).
  const server = createServer(createHandler(new InMemoryLock(), memoryStore()));
  const port = Number(process.env.PORT ?? 8080);
  server.listen(port, () => console.log(`listening on :${port}`));
}
