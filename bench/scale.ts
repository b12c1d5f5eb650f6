/**
 * First-delivery throughput with many keys already stored: Redis (a private redis-server,
 * one database per size), PostgreSQL (a private database, one table per size) and
 * InMemoryLock (one instance per size, plus its heap bytes per record). The sizes are
 * measured interleaved, round by round, like every other cell.
 */
import v8 from "node:v8";
import vm from "node:vm";
import { InMemoryLock, type LockBackend, lock } from "gcp-pubsub-idempotency";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
import { SqlLock } from "gcp-pubsub-idempotency/sql";
import { Redis } from "ioredis";
import pg from "pg";
import { startRedisServer } from "../test/support/redis.js";
import { privatePgDatabase } from "./backends/sql.js";
import { interleaved, type Op, progress, type Result, type Settings } from "./runner.js";
import { LEASE_MS, TTL_MS } from "./suite.js";

export const SCALE_CONCURRENCY = 16;

export interface ScaleResult {
  id: string;
  title: string;
  sizes: number[];
  /** One per size. */
  results: Result[];
  /** Seconds spent storing each size's keys. */
  loadSeconds: number[];
  note: string;
  /** InMemoryLock only. */
  bytesPerRecord?: number;
}

const body = () => undefined;

function firstDelivery(backend: LockBackend, tag: string): Op {
  const options = { backend, leaseMs: LEASE_MS };
  return (i) => lock(`${tag}:f:${i}`, options, body);
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function measureSizes(
  settings: Settings,
  sizes: readonly number[],
  backends: LockBackend[],
): Promise<Result[]> {
  const ops = sizes.map((n, k) => [String(n), firstDelivery(backends[k]!, `s${n}`)] as const);
  // Twice the usual rounds: the figure is a ratio of three numbers measured on their own.
  const results = await interleaved(
    { ...settings, rounds: settings.rounds * 2 },
    ops,
    SCALE_CONCURRENCY,
  );
  return sizes.map((n) => results.get(String(n))!);
}

// ------------------------------------------------------------------ Redis

/** Stores `count` done records, shaped as RedisLock's, server-side in batches. */
const LOAD_LUA = `
local prefix, from, to, expiresAt = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
for i = from, to do
  local key = prefix .. i
  redis.call('HSET', key, 'state', 'done', 'fencingId', '1', 'leaseExpiresAt', '0',
    'expiresAt', expiresAt, 'token', 'seed')
  redis.call('PEXPIREAT', key, expiresAt)
end
return to - from + 1`;

export async function redisScale(settings: Settings): Promise<ScaleResult> {
  const server = await startRedisServer();
  const clients: Redis[] = [];
  try {
    const sizes = [...settings.scaleSizes];
    const loadSeconds: number[] = [];
    const backends: LockBackend[] = [];
    for (const [k, n] of sizes.entries()) {
      const client = new Redis({ host: server.host, port: server.port, db: k + 1 });
      clients.push(client);
      const expiresAt = String(Date.now() + TTL_MS);
      loadSeconds.push(
        await timed(async () => {
          for (let from = 1; from <= n; from += 50_000) {
            const to = Math.min(n, from + 49_999);
            await client.eval(LOAD_LUA, 0, "s:load:", from, to, expiresAt);
          }
        }),
      );
      const stored = await client.dbsize();
      if (stored !== n) throw new Error(`redis scale: db ${k + 1} holds ${stored}, not ${n}`);
      progress(
        `scale redis: ${n.toLocaleString("en-US")} keys stored in ${loadSeconds.at(-1)!.toFixed(1)} s`,
      );
      backends.push(new RedisLock({ client, prefix: "s:", ttlMs: TTL_MS }));
    }
    const results = await measureSizes(settings, sizes, backends);
    return {
      id: "redis",
      title: "Redis (private redis-server, ioredis)",
      sizes,
      results,
      loadSeconds,
      note: "one database per size on a private redis-server, keys stored by a server-side script",
    };
  } finally {
    for (const client of clients) client.disconnect();
    await server.stop();
  }
}

// ------------------------------------------------------------------ PostgreSQL

export async function postgresScale(settings: Settings): Promise<ScaleResult> {
  const db = await privatePgDatabase("scale");
  const pool = new pg.Pool({ connectionString: db.url, max: SCALE_CONCURRENCY });
  pool.on("error", () => {});
  try {
    const sizes = [...settings.scaleSizes];
    const loadSeconds: number[] = [];
    const backends: LockBackend[] = [];
    for (const n of sizes) {
      const table = `scale_${n}`;
      const backend = new SqlLock({ client: pool, table, ttlMs: TTL_MS });
      await backend.ensureSchema();
      loadSeconds.push(
        await timed(async () => {
          await pool.query(
            `INSERT INTO ${table} ("key", state, fencing_id, lease_expires_at, expires_at, token)
             SELECT 'load:' || g, 'done', 1, 0, $1::bigint, 'seed' FROM generate_series(1, $2::int) AS g`,
            [Date.now() + TTL_MS, n],
          );
          // Set hint bits and statistics now, not during the timed claims.
          await pool.query(`VACUUM ANALYZE ${table}`);
        }),
      );
      progress(
        `scale postgres: ${n.toLocaleString("en-US")} rows stored in ${loadSeconds.at(-1)!.toFixed(1)} s`,
      );
      backends.push(backend);
    }
    const results = await measureSizes(settings, sizes, backends);
    return {
      id: "postgres",
      title: "PostgreSQL (private database, pg Pool of 16)",
      sizes,
      results,
      loadSeconds,
      note: "one table per size in a private database, rows stored by INSERT … SELECT generate_series, then VACUUM ANALYZE",
    };
  } finally {
    await pool.end();
    await db.drop();
  }
}

// ------------------------------------------------------------------ InMemoryLock

function collectGarbage(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  // Without --expose-gc: turn the flag on now and fetch gc from a fresh context.
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc") as () => void;
}

async function fill(backend: LockBackend, n: number): Promise<void> {
  const options = { backend, leaseMs: LEASE_MS };
  for (let from = 0; from < n; from += 1_000) {
    const batch: Promise<unknown>[] = [];
    for (let i = from; i < Math.min(n, from + 1_000); i++) {
      batch.push(lock(`load:${i}`, options, body));
    }
    await Promise.all(batch);
  }
}

export async function memoryScale(settings: Settings): Promise<ScaleResult> {
  const gc = collectGarbage();
  const sizes = [...settings.scaleSizes];
  const largest = sizes.at(-1)!;
  const backends: InMemoryLock[] = [];
  const loadSeconds: number[] = [];
  let bytesPerRecord = 0;
  for (const n of sizes) {
    gc();
    const before = process.memoryUsage().heapUsed;
    const backend = new InMemoryLock({ ttlMs: TTL_MS });
    loadSeconds.push(await timed(() => fill(backend, n)));
    if (n === largest) {
      gc();
      bytesPerRecord = (process.memoryUsage().heapUsed - before) / n;
    }
    backends.push(backend);
  }
  progress(
    `scale memory: ${bytesPerRecord.toFixed(0)} heap bytes per record over ${largest.toLocaleString("en-US")}`,
  );
  const results = await measureSizes(settings, sizes, backends);
  return {
    id: "memory",
    title: "InMemoryLock",
    sizes,
    results,
    loadSeconds,
    bytesPerRecord,
    note: `heap bytes per done record (key \`load:<n>\`, 7–13 characters) measured over ${largest.toLocaleString("en-US")} records, between two forced garbage collections`,
  };
}
