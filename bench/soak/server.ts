// The system under soak: idempotentHttp with push auth, on RedisLock over ioredis to the
// shared Redis under a private prefix, served by node:http with keep-alive. Its logger and
// handler only count, so nothing the soak adds grows with the deliveries.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { idempotentHttp, type Logger } from "gcp-pubsub-idempotency";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
import type { TestIdentity } from "gcp-pubsub-idempotency/testing";
import { Redis } from "ioredis";

/** What the handler and the logger saw, since the start. */
export interface ServerCounters {
  /** Handler runs that returned: exactly one per key, or a key ran twice. */
  succeeded: number;
  /** Handler runs that threw on purpose (a failure key's first attempt). */
  threw: number;
  /** Log lines by severity. */
  lines: Record<string, number>;
}

export interface SoakServer {
  readonly url: string;
  readonly counters: ServerCounters;
  /** HTTP connections open now. */
  connections(): Promise<number>;
  /** Keys under the soak's prefix now in Redis (records expire after the short ttl). */
  storedKeys(): Promise<number>;
  /** Close the server, delete the soak's keys, quit the client. */
  close(): Promise<void>;
}

/** A lease far above the 5 ms contention handler; a short ttl keeps the shared Redis small. */
const LEASE_MS = 30_000;
const TTL_MS = 20_000;
/** The handler of a contention key takes this long, so its concurrent copy meets it held. */
const CONTENTION_MS = 5;

export async function startServer(identity: TestIdentity): Promise<SoakServer> {
  const prefix = `soak:${process.pid}-${randomUUID().slice(0, 8)}:`;
  const client = new Redis({ host: "127.0.0.1", port: 6379, lazyConnect: true });
  await client.connect();
  const counters: ServerCounters = { succeeded: 0, threw: 0, lines: {} };
  const count = (severity: string) => () => {
    counters.lines[severity] = (counters.lines[severity] ?? 0) + 1;
  };
  const logger: Logger = { info: count("INFO"), warn: count("WARNING"), error: count("ERROR") };
  const backend = new RedisLock({ client, prefix, ttlMs: TTL_MS });
  const handle = idempotentHttp(
    { backend, logger, leaseMs: LEASE_MS, auth: identity.auth },
    async (message) => {
      const kind = message.attributes.kind;
      if (kind === "failure" && message.deliveryAttempt === 1) {
        counters.threw += 1;
        throw new Error("soak: a failure key's first attempt");
      }
      if (kind === "contention") await sleep(CONTENTION_MS);
      counters.succeeded += 1;
    },
  );
  const server = createServer((req: IncomingMessage, res: ServerResponse) => void handle(req, res));
  // Idle keep-alive sockets must outlive the pause at each interval's end: the handle count
  // is compared across intervals.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  const storedKeys = async (): Promise<number> => {
    let n = 0;
    for await (const keys of client.scanStream({ match: `${prefix}*`, count: 1000 })) {
      n += (keys as string[]).length;
    }
    return n;
  };
  const close = async (): Promise<void> => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    for await (const keys of client.scanStream({ match: `${prefix}*`, count: 1000 })) {
      if ((keys as string[]).length > 0) await client.unlink(...(keys as string[]));
    }
    await client.quit();
  };
  const connections = () =>
    new Promise<number>((resolve, reject) =>
      server.getConnections((error, n) => (error ? reject(error) : resolve(n))),
    );
  return { url: `http://127.0.0.1:${port}/push`, counters, connections, storedKeys, close };
}
