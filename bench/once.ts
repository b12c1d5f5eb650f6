/**
 * once() against lock() on a duplicate, on each store, same run, the three interleaved round
 * by round (bench/runner.ts's `interleaved`):
 *
 *   once      — `once(key)` of a key done by `once()` with a result of about 1 KiB of JSON:
 *               the claim's done answer carries the result, which is decoded and resolved
 *   onceSmall — the same with a result of about 100 bytes (an order id and a charge id)
 *   lock      — `lock(key)` of a key done by `lock()`: the claim answers done, `Duplicate` rejects
 *   lockFingerprint — the same with `fingerprint` on: the done answer carries the stored
 *               fingerprint, compared before `Duplicate` rejects
 *   lockFirst — a first delivery through `lock()` (claim, empty body, complete), a new key each
 *   stepsFirst — the same with `steps: true` and a body that calls no step: what the opt-in
 *               costs a service that never uses it
 *
 * Each cycles over `settings.dupKeys` done keys of its own, seeded through the verbs
 * themselves; a once() duplicate that runs its body or resolves to another key's result stops
 * the run. The results, and the decode of them timed alone, are bench/once-results.ts's. Stores: Redis (ioredis, one connection, a private key prefix whose keys are unlinked
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
  type ChargeResult,
  type DecodeTiming,
  decodeBench,
  MARKER_BYTES,
  type OrderResult,
  orderIdFor,
  RESULT_JSON_BYTES,
  resultFor,
  SMALL_RESULT_JSON_BYTES,
  smallResultFor,
} from "./once-results.js";
import {
  fmtRate,
  interleaved,
  loadAverage,
  type Op,
  processCpu,
  progress,
  type Result,
  type ServerCpu,
  type Settings,
  spread,
} from "./runner.js";
import { check, expectRejection, LEASE_MS, RUN_ID, TTL_MS, version } from "./suite.js";

const KEY = {
  once: (i: number, settings: Settings) => `once:dup:${i % settings.dupKeys}`,
  onceSmall: (i: number, settings: Settings) => `once-small:dup:${i % settings.dupKeys}`,
  lock: (i: number, settings: Settings) => `lock:dup:${i % settings.dupKeys}`,
  lockFingerprint: (i: number, settings: Settings) => `lock-fp:dup:${i % settings.dupKeys}`,
};

/** The fingerprint the lockFingerprint keys were done with, and every duplicate gives. */
const FINGERPRINT = "po=4711;total=99.00;currency=EUR";

/** A new key per first delivery, across rounds and cells alike. */
let firstDeliveries = 0;
const firstKey = (kind: string) => `${kind}:first:${RUN_ID}:${firstDeliveries++}`;
const emptyBody = async () => {};

const neverRuns = (): never => {
  throw new Error("bench sanity check failed: a duplicate ran its body");
};

/** A replayed result must be its done key's own: another key's, or a wrong shape, stops the run. */
function checkReplay(value: { orderId: string }, expected: string, whole: boolean): void {
  if (value.orderId !== expected) {
    throw new Error(`bench sanity check failed: once() replayed ${value.orderId}, not ${expected}`);
  }
  if (!whole) {
    throw new Error(
      `bench sanity check failed: once() replayed ${expected}, not the whole result recorded`,
    );
  }
}

/** The three contenders over one backend. */
function contenders(backend: LockBackend, settings: Settings): Array<readonly [string, Op]> {
  const options = { backend, leaseMs: LEASE_MS };
  // What each key must replay, built before the clock runs: the checks cost both alike.
  const keys = Array.from({ length: settings.dupKeys }, (_, k) => k);
  const orderIds = keys.map(orderIdFor);
  const chargeIds = keys.map((k) => smallResultFor(k).chargeId);
  return [
    [
      "once",
      async (i) => {
        const value = await once<OrderResult>(KEY.once(i, settings), options, neverRuns);
        checkReplay(value, orderIds[i % settings.dupKeys]!, value.items.length === 8);
      },
    ],
    [
      "onceSmall",
      async (i) => {
        const value = await once<ChargeResult>(KEY.onceSmall(i, settings), options, neverRuns);
        const k = i % settings.dupKeys;
        checkReplay(value, orderIds[k]!, value.chargeId === chargeIds[k]);
      },
    ],
    ["lock", (i) => expectRejection(lock(KEY.lock(i, settings), options, neverRuns), Duplicate)],
    [
      "lockFingerprint",
      (i) =>
        expectRejection(
          lock(
            KEY.lockFingerprint(i, settings),
            { ...options, fingerprint: FINGERPRINT },
            neverRuns,
          ),
          Duplicate,
        ),
    ],
    ["lockFirst", () => lock(firstKey("lock"), options, emptyBody)],
    ["stepsFirst", () => lock(firstKey("steps"), { ...options, steps: true }, emptyBody)],
  ];
}

/** The done keys of all three, written through the verbs themselves, 30 at a time. */
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
      once(KEY.onceSmall(i, settings), options, () => smallResultFor(i)),
      lock(KEY.lock(i, settings), options, () => undefined),
      lock(
        KEY.lockFingerprint(i, settings),
        { ...options, fingerprint: FINGERPRINT },
        () => undefined,
      ),
    );
    if (pending.length >= 30) await settle();
  }
  await settle();
  // A seeded once() key replays its result; a seeded lock() key is a duplicate.
  const replay = await once<OrderResult>(KEY.once(1, settings), options, neverRuns);
  check(replay.orderId === resultFor(1).orderId, "a seeded once() key replays its result");
  const small = await once<ChargeResult>(KEY.onceSmall(1, settings), options, neverRuns);
  check(
    small.chargeId === smallResultFor(1).chargeId,
    "a seeded small once() key replays its result",
  );
  await expectRejection(lock(KEY.lock(1, settings), options, neverRuns), Duplicate);
  await expectRejection(
    lock(KEY.lockFingerprint(1, settings), { ...options, fingerprint: FINGERPRINT }, neverRuns),
    Duplicate,
  );
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

/**
 * The decode of both results alone, then every store, the three contenders interleaved at each
 * in-flight count of `settings`.
 */
export async function onceBench(
  settings: Settings,
  only: readonly string[] = Object.keys(STORES),
): Promise<{ run: OnceRun; failed: boolean }> {
  const loadAtStart = loadAverage();
  const decode = decodeBench(settings);
  const perCall = (t: DecodeTiming) => spread(t.cpuUs)?.median.toFixed(2) ?? "—";
  progress(
    `once: decode alone, CPU µs per call: ${perCall(decode.large)} (1 KiB), ${perCall(decode.small)} (100 B)`,
  );
  const run: OnceRun = {
    settings,
    // The JSON and once()'s two-character marker ("r:"), as stored.
    resultBytes: RESULT_JSON_BYTES + MARKER_BYTES,
    smallResultBytes: SMALL_RESULT_JSON_BYTES + MARKER_BYTES,
    decode,
    loadAtStart,
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
            onceSmall: results.get("onceSmall")!,
            lock: results.get("lock")!,
            lockFingerprint: results.get("lockFingerprint")!,
            lockFirst: results.get("lockFirst")!,
            stepsFirst: results.get("stepsFirst")!,
          };
          result.cells.push(cell);
          const per = (r: Result) => (cell.lock.opsPerSec / r.opsPerSec).toFixed(2);
          progress(
            `  once ${id} ×${c}: once 1 KiB ${fmtRate(cell.once.opsPerSec)}/s, 100 B ${fmtRate(cell.onceSmall.opsPerSec)}/s, lock ${fmtRate(cell.lock.opsPerSec)}/s: ÷ lock ${per(cell.once)}× and ${per(cell.onceSmall)}× per operation`,
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
