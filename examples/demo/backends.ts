/**
 * The demo's backend choice, in one place. Each entry builds a LockBackend from a plain,
 * serialisable config, so the crashing child process can build the same one from what
 * the parent sends it. Adding a store (sqlite, postgres, …) is one more entry here.
 */
import { InMemoryLock, type LockBackend } from "gcp-pubsub-idempotency";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
import { Redis } from "ioredis";

/** What the parent passes to every process that opens the backend. */
export interface BackendConfig {
  /** Per-run namespace: a prefix, table or kind name so runs never see each other's keys. */
  readonly runId: string;
  readonly redisUrl: string;
}

export interface OpenBackend {
  readonly lock: LockBackend;
  /** Remove this run's records (best effort) and close connections. */
  close(options?: { cleanup?: boolean }): Promise<void>;
}

export interface BackendEntry {
  readonly describe: string;
  /**
   * True when another process can open the same store: then the crash case runs in a real
   * child process; otherwise the parent claims the key and abandons it in-process.
   */
  readonly shared: boolean;
  open(config: BackendConfig): Promise<OpenBackend>;
}

export const BACKENDS = {
  memory: {
    describe: "InMemoryLock in this process (no server; crashes are simulated in-process)",
    shared: false,
    async open() {
      return { lock: new InMemoryLock(), async close() {} };
    },
  },
  redis: {
    describe: "RedisLock on --redis-url / REDIS_URL / redis://127.0.0.1:6379",
    shared: true,
    async open(config) {
      // Fail fast instead of ioredis's endless reconnecting when no server is there.
      const client = new Redis(config.redisUrl, {
        lazyConnect: true,
        maxRetriesPerRequest: 1,
        retryStrategy: () => null,
      });
      try {
        await client.connect();
      } catch (error) {
        client.disconnect();
        throw new Error(`cannot reach Redis at ${config.redisUrl}: ${String(error)}`);
      }
      const prefix = `demo:${config.runId}:`;
      return {
        lock: new RedisLock({ client, prefix, ttlMs: 10 * 60_000 }),
        async close(options) {
          if (options?.cleanup) {
            let cursor = "0";
            do {
              const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
              cursor = next;
              if (keys.length > 0) await client.unlink(...keys);
            } while (cursor !== "0");
          }
          client.disconnect();
        },
      };
    },
  },
} satisfies Record<string, BackendEntry>;

export type BackendName = keyof typeof BACKENDS;

export function isBackendName(name: string): name is BackendName {
  return Object.hasOwn(BACKENDS, name);
}

export function openBackend(name: BackendName, config: BackendConfig): Promise<OpenBackend> {
  const entry: BackendEntry = BACKENDS[name];
  return entry.open(config);
}
