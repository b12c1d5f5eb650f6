// Opening the redis store: ioredis when it is installed, else node-redis; connected at once,
// without retries, so an unreachable server fails the command.
import { missingPeerText } from "../../core/peer.js";
import { CONNECT_TIMEOUT_MS, defined, loadDriver, reach, type Ttl } from "./connect.js";
import { type OpenStore, opened } from "./reads.js";

export async function openRedis(
  url: string,
  prefix: string | undefined,
  ttl: Ttl,
): Promise<OpenStore> {
  const { RedisLock } = await import("../../backends/redis/index.js");
  const where = new URL(url).host;
  const io = await loadDriver("redis", "ioredis", () => import("ioredis"), true);
  if (io !== undefined) {
    const client = new io.Redis(url, {
      lazyConnect: true,
      connectTimeout: CONNECT_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    // Without a listener an unreachable server's 'error' event would end the process; its
    // error also says more than connect()'s own ("Connection is closed.").
    let lastError: unknown;
    client.on("error", (error) => {
      lastError = error;
    });
    await reach(
      `redis at ${where}`,
      () => client.connect(),
      () => lastError,
    );
    const backend = new RedisLock({ client, ...defined({ prefix }), ...ttl });
    return opened(backend, { store: "redis", at: where, prefix: backend.prefix }, async () => {
      client.disconnect();
    });
  }
  const nodeRedis = await loadDriver("redis", "redis", () => import("redis"), true);
  if (nodeRedis === undefined) {
    throw new Error(`${missingPeerText("the redis store", "ioredis")} (or npm install redis)`);
  }
  const client = nodeRedis.createClient({
    url,
    socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: false },
  });
  client.on("error", () => {});
  await reach(`redis at ${where}`, () => client.connect());
  const backend = new RedisLock({ client, ...defined({ prefix }), ...ttl });
  return opened(backend, { store: "redis", at: where, prefix: backend.prefix }, async () => {
    await client.close();
  });
}
