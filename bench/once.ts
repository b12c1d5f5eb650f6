/**
 * once() against lock() on a duplicate, on each store, same run, the two interleaved round by
 * round (bench/runner.ts's `interleaved`):
 *
 *   once — `once(key)` of a key done by `once()` with a result of about 1 KiB of JSON: the
 *          claim's done answer carries the result, which is decoded and resolved
 *   lock — `lock(key)` of a key done by `lock()`: the claim answers done, `Duplicate` rejects
 *
 * Each cycles over `settings.dupKeys` done keys of its own, seeded through the verbs
 * themselves; a once() duplicate that runs its body or resolves to another key's result stops
 * the run. Stores: Redis (ioredis, one connection, a private key prefix whose keys are unlinked
 * at the end; never a flush), PostgreSQL (a private database, dropped at the end) and
 * InMemoryLock (the library's own CPU, no I/O: shown, not judged). bench/once-report.ts reads
 * the ratios. Run by the suite: `npm run bench -- --only once`.
 */
import { Duplicate, InMemoryLock, type LockBackend, lock, once } from "gcp-pubsub-idempotency";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
import { SqlLock } from "gcp-pubsub-idempotency/sql";
import { Redis } from "ioredis";
import pg from "pg";
import { redisCpu } from "./backends/redis.js";
import { privatePgDatabase } from "./backends/sql.js";
import type { OnceCell, OnceRun, OnceStore } from "./once-report.js";
import {
  fmtRate,
  interleaved,
  loadAverage,
  type Op,
  processCpu,
  progress,
  type ServerCpu,
  type Settings,
} from "./runner.js";
import { check, expectRejection, LEASE_MS, RUN_ID, TTL_MS, version } from "./suite.js";

/** The result a once() body returned for done key `i`: about 1,000 bytes of JSON. */
export interface OrderResult {
  orderId: string;
  chargeId: string;
  status: string;
  items: Array<{ sku: string; quantity: number; priceCents: number }>;
  note: string;
}

/** Bytes of JSON each recorded result is padded to (the "r:" marker adds 2): within 1 KiB. */
export const RESULT_JSON_BYTES = 1_000;

/** Done key `i`'s result: its own order id, so a replay of another key's record is caught. */
export function resultFor(i: number): OrderResult {
  const base: OrderResult = {
    orderId: `order-${String(i).padStart(6, "0")}`,
    chargeId: `ch_${String(i).padStart(6, "0")}_3NqkP9Lm2xQwZr8T`,
    status: "charged",
    items: Array.from({ length: 8 }, (_, k) => ({
      sku: `SKU-${1000 + k}`,
      quantity: 1 + (k % 3),
      priceCents: 1999 + 100 * k,
    })),
    note: "",
  };
  // ASCII only: one byte per character, so the length is the byte count.
  const pad = RESULT_JSON_BYTES - JSON.stringify(base).length;
  if (pad < 0) throw new Error("bench: the once() result is over its size");
  return { ...base, note: "n".repeat(pad) };
}

const KEY = {
  once: (i: number, settings: Settings) => `once:dup:${i % settings.dupKeys}`,
  lock: (i: number, settings: Settings) => `lock:dup:${i % settings.dupKeys}`,
};

const neverRuns = (): never => {
  throw new Error("bench sanity check failed: a duplicate ran its body");
};

/** The two contenders over one backend. */
function contenders(backend: LockBackend, settings: Settings): Array<readonly [string, Op]> {
  const options = { backend, leaseMs: LEASE_MS };
  return [
    [
      "once",
      async (i) => {
        const value = await once<OrderResult>(KEY.once(i, settings), options, neverRuns);
        const expected = `order-${String(i % settings.dupKeys).padStart(6, "0")}`;
        if (value.orderId !== expected || value.items.length !== 8) {
          throw new Error(
            `bench sanity check failed: once() replayed ${value.orderId}, not ${expected}`,
          );
        }
      },
    ],
    ["lock", (i) => expectRejection(lock(KEY.lock(i, settings), options, neverRuns), Duplicate)],
  ];
}

/** The done keys of both, written through the verbs themselves, 32 at a time. */
async function seed(backend: LockBackend, settings: Settings): Promise<void> {
  // Said before any write: once() would refuse it on every call, and the run time nothing.
  if (backend.supports?.results !== true) {
    throw new Error(
      `${backend.constructor.name} does not store results yet (backend.supports.results): once() refuses it`,
    );
  }
  const options = { backend, leaseMs: LEASE_MS };
  let pending: Promise<unknown>[] = [];
  // Every call of a batch settled before the next, or before a failure is thrown: none is
  // left running while the store's keys are removed.
  const settle = async () => {
    const failed = (await Promise.allSettled(pending)).find((r) => r.status === "rejected");
    pending = [];
    if (failed) throw failed.reason;
  };
  for (let i = 0; i < settings.dupKeys; i++) {
    pending.push(
      once(KEY.once(i, settings), options, () => resultFor(i)),
      lock(KEY.lock(i, settings), options, () => undefined),
    );
    if (pending.length >= 32) await settle();
  }
  await settle();
  // A seeded once() key replays its result; a seeded lock() key is a duplicate.
  const replay = await once<OrderResult>(KEY.once(1, settings), options, neverRuns);
  check(replay.orderId === resultFor(1).orderId, "a seeded once() key replays its result");
  await expectRejection(lock(KEY.lock(1, settings), options, neverRuns), Duplicate);
}

interface Store {
  id: string;
  title: string;
  versions: string;
  /** The backend at one concurrency (pools sized to it), and how to let it go. */
  open(concurrency: number): Promise<{ backend: LockBackend; close(): Promise<void> }>;
  serverCpu?: ServerCpu;
  stop(): Promise<void>;
}

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

async function redis(settings: Settings): Promise<Store> {
  const prefix = `bench:once:${RUN_ID}:`;
  const io = new Redis(REDIS_URL, { lazyConnect: true });
  await io.connect();
  // Only this run's keys, by their private prefix: the server is shared.
  const cleanUp = async () => {
    let cursor = "0";
    do {
      const [next, keys] = await io.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1_000);
      cursor = next;
      if (keys.length > 0) await io.unlink(...keys);
    } while (cursor !== "0");
  };
  try {
    const backend = new RedisLock({ client: io, prefix, ttlMs: TTL_MS });
    await seed(backend, settings);
    const serverVersion = /redis_version:(\S+)/.exec(await io.info("server"))?.[1] ?? "?";
    return {
      id: "redis",
      title: "Redis",
      versions: `Redis ${serverVersion} at ${REDIS_URL.replace(/\/\/[^@]*@/, "//")}; ioredis ${version("ioredis")}, one connection; prefix \`${prefix}\``,
      open: async () => ({ backend, close: async () => {} }),
      serverCpu: () => redisCpu(() => io.info("cpu")),
      stop: async () => {
        await cleanUp();
        io.disconnect();
      },
    };
  } catch (error) {
    await cleanUp().catch(() => {});
    io.disconnect();
    throw error;
  }
}

async function postgres(settings: Settings): Promise<Store> {
  const db = await privatePgDatabase("once");
  const setup = new pg.Pool({ connectionString: db.url, max: 4 });
  setup.on("error", () => {});
  try {
    const backend = new SqlLock({ client: setup, ttlMs: TTL_MS });
    await backend.ensureSchema();
    await seed(backend, settings);
  } catch (error) {
    await setup.end().catch(() => {});
    await db.drop();
    throw error;
  }
  await setup.end();
  return {
    id: "postgres",
    title: "PostgreSQL",
    versions: `PostgreSQL ${db.version}; pg ${version("pg")}; a pg Pool with max = in flight, over a private database`,
    async open(concurrency) {
      const pool = new pg.Pool({ connectionString: db.url, max: concurrency });
      // The database is dropped WITH (FORCE) at the end: an idle client's error is expected.
      pool.on("error", () => {});
      return { backend: new SqlLock({ client: pool, ttlMs: TTL_MS }), close: () => pool.end() };
    },
    serverCpu: processCpu(["postgres"]),
    stop: () => db.drop(),
  };
}

async function memory(settings: Settings): Promise<Store> {
  const backend = new InMemoryLock();
  await seed(backend, settings);
  return {
    id: "memory",
    title: "InMemoryLock",
    versions: "InMemoryLock, in this process (no I/O: the library's own work alone)",
    open: async () => ({ backend, close: async () => {} }),
    stop: () => backend.close(),
  };
}

const STORES: Record<string, { title: string; start: (settings: Settings) => Promise<Store> }> = {
  memory: { title: "InMemoryLock", start: memory },
  redis: { title: "Redis", start: redis },
  postgres: { title: "PostgreSQL", start: postgres },
};

/** Every store, the two contenders interleaved at each in-flight count of `settings`. */
export async function onceBench(
  settings: Settings,
  only: readonly string[] = Object.keys(STORES),
): Promise<{ run: OnceRun; failed: boolean }> {
  const run: OnceRun = {
    settings,
    // The JSON and once()'s two-character marker ("r:"), as stored.
    resultBytes: RESULT_JSON_BYTES + 2,
    loadAtStart: loadAverage(),
    loadAtEnd: "",
    stores: [],
  };
  let failed = false;
  for (const id of only) {
    const factory = STORES[id];
    if (factory === undefined) throw new Error(`once bench: unknown store ${id}`);
    const result: OnceStore = { id, title: factory.title, versions: "", cells: [] };
    run.stores.push(result);
    let store: Store | undefined;
    try {
      store = await factory.start(settings);
      result.title = store.title;
      result.versions = store.versions;
      progress(`once ${store.title}: ${store.versions}`);
      for (const c of settings.concurrency) {
        const session = await store.open(c);
        try {
          const results = await interleaved(
            settings,
            contenders(session.backend, settings),
            c,
            store.serverCpu,
          );
          const cell: OnceCell = {
            store: id,
            inFlight: c,
            once: results.get("once")!,
            lock: results.get("lock")!,
          };
          result.cells.push(cell);
          progress(
            `  once ${id} ×${c}: once ${fmtRate(cell.once.opsPerSec)}/s, lock ${fmtRate(cell.lock.opsPerSec)}/s: once ÷ lock ${(cell.lock.opsPerSec / cell.once.opsPerSec).toFixed(2)}× per operation`,
          );
        } finally {
          await session.close();
        }
      }
    } catch (error) {
      failed = true;
      result.error = error instanceof Error ? error.message : String(error);
      progress(`  once ${id} FAILED: ${result.error}`);
    } finally {
      await store?.stop().catch(() => {});
    }
  }
  run.loadAtEnd = loadAverage();
  return { run, failed };
}
