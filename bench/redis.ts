/**
 * RedisLock against the local Redis: lock() on a fresh key (claim → empty body → complete),
 * a duplicate of a completed key, and contention on a held key, at 1, 16 and 64 in flight,
 * over ioredis and over @redis/client 6. Beside it, in the same run, the floor (as many raw
 * EVALSHA round trips of a no-op script: 2 per first delivery, 1 otherwise) for each client,
 * and Powertools' makeIdempotent with its CachePersistenceLayer over @redis/client 6.
 *
 *   node --import tsx --import ./scripts/text-loader.mjs bench/redis.ts [--quick] [--write]
 *
 * REDIS_URL (default redis://127.0.0.1:6379) picks the server. Every key lives under a prefix
 * unique to the run, deleted at the end with SCAN + UNLINK; nothing else is touched.
 * --write rewrites the "## Redis" section of BENCHMARKS.md with this run's table.
 */
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  makeIdempotent,
} from "@aws-lambda-powertools/idempotency";
import { CachePersistenceLayer } from "@aws-lambda-powertools/idempotency/cache";
import { createClient } from "@redis/client";
import { Duplicate, InProgress, lock } from "gcp-pubsub-idempotency";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
import { Redis } from "ioredis";

const quick = process.argv.includes("--quick");
const write = process.argv.includes("--write");
const MEASURE_MS = quick ? 300 : 2_000;
const WARMUP_MS = quick ? 100 : 300;
// A cell's time is split into rounds, the five systems interleaved within each round, so a
// burst of load from elsewhere on the machine lands on all of them alike.
const ROUNDS = quick ? 1 : 4;
const CONCURRENCY = [1, 16, 64] as const;
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const TTL_S = 3_600;
const LEASE_MS = 60_000;
const RUN = `bench-${Date.now().toString(36)}-${randomUUID().slice(0, 8)}:`;

type Scenario = "first" | "duplicate" | "contention";
type System =
  | "ours/ioredis"
  | "ours/@redis"
  | "floor/ioredis"
  | "floor/@redis"
  | "powertools/@redis";
interface Sample {
  latencies: number[];
  seconds: number;
}
interface Result {
  opsPerSec: number;
  p50: number; // µs
  p99: number; // µs
  ops: number;
}

/** `concurrency` workers loop over `op` for `ms`; every op's latency is kept. */
async function drive(
  op: (i: number) => Promise<void>,
  concurrency: number,
  ms: number,
  counter: { i: number },
): Promise<Sample> {
  const latencies: number[] = [];
  const deadline = process.hrtime.bigint() + BigInt(ms) * 1_000_000n;
  const worker = async () => {
    while (process.hrtime.bigint() < deadline) {
      const i = counter.i++;
      const t0 = process.hrtime.bigint();
      await op(i);
      latencies.push(Number(process.hrtime.bigint() - t0) / 1_000);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { latencies, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
}

function summarize(samples: Sample[]): Result {
  const latencies = samples.flatMap((sample) => sample.latencies).sort((a, b) => a - b);
  const seconds = samples.reduce((sum, sample) => sum + sample.seconds, 0);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    opsPerSec: latencies.length / seconds,
    p50: at(0.5),
    p99: at(0.99),
    ops: latencies.length,
  };
}

// One counter for the whole run, so every first delivery gets a key never used before.
const counter = { i: 0 };
async function measure(op: (i: number) => Promise<void>, concurrency: number): Promise<Sample> {
  await drive(op, concurrency, WARMUP_MS, counter);
  return drive(op, concurrency, MEASURE_MS / ROUNDS, counter);
}

/** A rejection that must be `kind`, so a wrong outcome stops the run instead of timing it. */
function expectReject(kind: abstract new (...args: never[]) => Error) {
  return (error: unknown) => {
    if (!(error instanceof kind)) throw error;
  };
}
const mustReject = () => {
  throw new Error("expected a rejection");
};

// --- clients -------------------------------------------------------------------------------

const io = new Redis(REDIS_URL, { lazyConnect: true });
await io.connect();
const nr = createClient({ url: REDIS_URL });
await nr.connect();
const ptClient = createClient({ url: REDIS_URL });
await ptClient.connect();

const info = await io.info("server");
const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? "?";

const NOOP = "return 1";
const NOOP_SHA = createHash("sha1").update(NOOP).digest("hex");
await io.script("LOAD", NOOP);

// --- the systems under test ----------------------------------------------------------------

const oursIo = new RedisLock({ client: io, prefix: `${RUN}io:`, ttlMs: TTL_S * 1_000 });
const oursNr = new RedisLock({ client: nr, prefix: `${RUN}nr:`, ttlMs: TTL_S * 1_000 });

const context = {
  getRemainingTimeInMillis: () => 60_000,
  functionName: "bench",
  awsRequestId: "bench",
  callbackWaitsForEmptyEventLoop: false,
  functionVersion: "1",
  invokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:bench",
  memoryLimitInMB: "128",
  logGroupName: "bench",
  logStreamName: "bench",
  done: () => {},
  fail: () => {},
  succeed: () => {},
};
const persistenceStore = new CachePersistenceLayer({ client: ptClient });
const ptConfig = new IdempotencyConfig({ eventKeyJmesPath: "id", expiresAfterSeconds: TTL_S });
interface Event {
  id: string;
}
let ptGate: Promise<void> = Promise.resolve();
const ptHandler = makeIdempotent(
  async (event: Event, _context: unknown): Promise<void> => {
    if (event.id === "held") await ptGate;
  },
  { persistenceStore, config: ptConfig, keyPrefix: `${RUN}pt` },
);

const body = () => undefined;
const ioOpts = { backend: oursIo, leaseMs: LEASE_MS };
const nrOpts = { backend: oursNr, leaseMs: LEASE_MS };

// The shared server's script cache can be flushed by someone else mid-run: like RedisLock, the
// floor falls back to EVAL (which caches the script again) on NOSCRIPT.
const noScript = (error: unknown) => error instanceof Error && error.message.startsWith("NOSCRIPT");
const FLOOR_KEY = `${RUN}floor`;
const floorIo = (): Promise<unknown> =>
  io.evalsha(NOOP_SHA, 1, FLOOR_KEY).catch((error: unknown) => {
    if (!noScript(error)) throw error;
    return io.eval(NOOP, 1, FLOOR_KEY);
  });
const floorNr = (): Promise<unknown> =>
  nr.evalSha(NOOP_SHA, { keys: [FLOOR_KEY], arguments: [] }).catch((error: unknown) => {
    if (!noScript(error)) throw error;
    return nr.eval(NOOP, { keys: [FLOOR_KEY], arguments: [] });
  });

// Completed keys for the duplicate runs; held keys (bodies parked on a gate) for contention.
await lock("dup", ioOpts, body);
await lock("dup", nrOpts, body);
await ptHandler({ id: "dup" }, context);
// Held keys are claimed right before the contention runs: a lease (ours) and an in-progress
// expiry (Powertools: getRemainingTimeInMillis) of 60 s would lapse during a full run.
let openGate = () => {};
let holders: Promise<unknown>[] = [];
async function holdKeys(): Promise<void> {
  const gate = new Promise<void>((done) => {
    openGate = done;
  });
  ptGate = gate;
  holders = [
    lock("held", ioOpts, () => gate),
    lock("held", nrOpts, () => gate),
    ptHandler({ id: "held" }, context),
  ];
  await new Promise((done) => setTimeout(done, 50)); // let the three claims land
}

const ops: Record<Scenario, Record<System, (i: number) => Promise<void>>> = {
  first: {
    "ours/ioredis": (i) => lock(`a${i}`, ioOpts, body),
    "ours/@redis": (i) => lock(`a${i}`, nrOpts, body),
    "floor/ioredis": async () => {
      await floorIo();
      await floorIo();
    },
    "floor/@redis": async () => {
      await floorNr();
      await floorNr();
    },
    "powertools/@redis": (i) => ptHandler({ id: `a${i}` }, context),
  },
  duplicate: {
    "ours/ioredis": () => lock("dup", ioOpts, body).then(mustReject, expectReject(Duplicate)),
    "ours/@redis": () => lock("dup", nrOpts, body).then(mustReject, expectReject(Duplicate)),
    "floor/ioredis": async () => {
      await floorIo();
    },
    "floor/@redis": async () => {
      await floorNr();
    },
    // Powertools answers a completed key with the stored result.
    "powertools/@redis": () => ptHandler({ id: "dup" }, context),
  },
  contention: {
    "ours/ioredis": () => lock("held", ioOpts, body).then(mustReject, expectReject(InProgress)),
    "ours/@redis": () => lock("held", nrOpts, body).then(mustReject, expectReject(InProgress)),
    "floor/ioredis": async () => {
      await floorIo();
    },
    "floor/@redis": async () => {
      await floorNr();
    },
    "powertools/@redis": () =>
      ptHandler({ id: "held" }, context).then(
        mustReject,
        expectReject(IdempotencyAlreadyInProgressError),
      ),
  },
};

// --- run -------------------------------------------------------------------------------------

const SCENARIOS: Scenario[] = ["first", "duplicate", "contention"];
const SYSTEMS: System[] = [
  "ours/ioredis",
  "ours/@redis",
  "floor/ioredis",
  "floor/@redis",
  "powertools/@redis",
];
const TITLE: Record<Scenario, string> = {
  first: "(a) first delivery",
  duplicate: "(b) duplicate of a completed key",
  contention: "(c) contention on a held key",
};

const cpus = os.cpus();
const machine = `${cpus[0]?.model.trim() ?? "?"}, ${cpus.length} cores, ${os.platform()} ${os.release()}`;
const header = [
  `Date: ${new Date().toISOString()}${quick ? " (--quick)" : ""}`,
  `Machine: ${machine}`,
  `Node ${process.version}; Redis ${redisVersion} at ${REDIS_URL.replace(/\/\/[^@]*@/, "//")}; ioredis ${version("ioredis")}; @redis/client ${version("@redis/client")}; @aws-lambda-powertools/idempotency ${version("@aws-lambda-powertools/idempotency")}`,
  `Each cell: ${ROUNDS} round(s), the five systems interleaved, each round ${WARMUP_MS} ms warm-up then ${MEASURE_MS / ROUNDS} ms timed (${MEASURE_MS} ms in all) with the given number of operations in flight; one process, client and server on the same machine.`,
];
const load = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");
header.push(`Load average (1/5/15 min) at start: ${load()}`);
console.log(header.join("\n"));

const results = new Map<string, Result>();
const cell = (s: Scenario, sys: System, c: number) => `${s}|${sys}|${c}`;
try {
  for (const s of SCENARIOS) {
    if (s === "contention") await holdKeys();
    for (const c of CONCURRENCY) {
      const samples = new Map<System, Sample[]>(SYSTEMS.map((sys) => [sys, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const sys of SYSTEMS) samples.get(sys)?.push(await measure(ops[s][sys], c));
      }
      for (const sys of SYSTEMS) {
        const r = summarize(samples.get(sys) ?? []);
        results.set(cell(s, sys, c), r);
        console.error(
          `${s.padEnd(10)} c=${String(c).padEnd(2)} ${sys.padEnd(18)} ${fmt(r.opsPerSec).padStart(8)}/s  p50 ${r.p50.toFixed(0)} µs  p99 ${r.p99.toFixed(0)} µs`,
        );
      }
    }
  }
} catch (error) {
  await cleanUp(); // a failed run leaves no keys behind either
  throw error;
}

openGate();
await Promise.allSettled(holders);

// --- report ----------------------------------------------------------------------------------

const get = (s: Scenario, sys: System, c: number): Result => {
  const r = results.get(cell(s, sys, c));
  if (!r) throw new Error(`missing ${cell(s, sys, c)}`);
  return r;
};
const lines: string[] = [];
for (const s of SCENARIOS) {
  lines.push(`### ${TITLE[s]}`, "");
  lines.push("| system | in flight | ops/s | p50 µs | p99 µs |", "|---|---:|---:|---:|---:|");
  for (const c of CONCURRENCY) {
    for (const sys of SYSTEMS) {
      const r = get(s, sys, c);
      lines.push(
        `| ${sys} | ${c} | ${fmt(r.opsPerSec)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} |`,
      );
    }
  }
  lines.push("");
}

// Targets: throughput vs Powertools at 16 and 64 (a: 2x / 1.25x, b: 3x / 2x); p50 within 1.15x
// of the floor of the same client.
const TARGET: Partial<Record<Scenario, { io: number; nr: number }>> = {
  first: { io: 2, nr: 1.25 },
  duplicate: { io: 3, nr: 2 },
};
lines.push("### Ratios", "");
lines.push(
  "| scenario | in flight | ioredis / Powertools ops/s | @redis / Powertools ops/s | ioredis p50 / floor p50 | @redis p50 / floor p50 | ioredis / floor ops/s | @redis / floor ops/s |",
  "|---|---:|---:|---:|---:|---:|---:|---:|",
);
const mark = (value: number, ok: boolean | undefined) =>
  `${value.toFixed(2)}x${ok === undefined ? "" : ok ? " ✓" : " ✗"}`;
for (const s of SCENARIOS) {
  for (const c of CONCURRENCY) {
    const target = c === 1 ? undefined : TARGET[s];
    const pt = get(s, "powertools/@redis", c);
    const oi = get(s, "ours/ioredis", c);
    const on = get(s, "ours/@redis", c);
    const fi = get(s, "floor/ioredis", c);
    const fn = get(s, "floor/@redis", c);
    const floorTarget = c === 1 ? undefined : 1.15;
    lines.push(
      `| ${s} | ${c} | ${mark(oi.opsPerSec / pt.opsPerSec, target && oi.opsPerSec / pt.opsPerSec >= target.io)} | ${mark(on.opsPerSec / pt.opsPerSec, target && on.opsPerSec / pt.opsPerSec >= target.nr)} | ${mark(oi.p50 / fi.p50, floorTarget && oi.p50 / fi.p50 <= floorTarget)} | ${mark(on.p50 / fn.p50, floorTarget && on.p50 / fn.p50 <= floorTarget)} | ${mark(oi.opsPerSec / fi.opsPerSec, undefined)} | ${mark(on.opsPerSec / fn.opsPerSec, undefined)} |`,
    );
  }
}
lines.push(
  "",
  "✓/✗: the targets at 16 and 64 in flight — (a) ours ≥ 2x Powertools over ioredis, ≥ 1.25x over @redis/client; (b) ≥ 3x and ≥ 2x; ours' p50 ≤ 1.15x its client's floor. Contention has no Powertools target.",
);

header.push(
  `Load average at end: ${load()} — other processes share these cores, so compare within a run, not across runs.`,
);
const table = lines.join("\n");
console.log(`\n${table}`);

if (write) {
  const file = new URL("../BENCHMARKS.md", import.meta.url);
  const section = [
    "## Redis",
    "",
    "`node --import tsx --import ./scripts/text-loader.mjs bench/redis.ts --write`",
    "",
    ...header.map((line) => `${line}  `),
    "",
    table,
    "",
  ].join("\n");
  const old = existsSync(file) ? readFileSync(file, "utf8") : "# Benchmarks\n";
  const start = old.search(/^## Redis\s*$/m);
  let next: string;
  if (start === -1) {
    next = `${old.trimEnd()}\n\n${section}`;
  } else {
    const rest = old.slice(start + 1);
    const end = rest.search(/^## /m);
    next = old.slice(0, start) + section + (end === -1 ? "" : `\n${rest.slice(end)}`);
  }
  writeFileSync(file, `${next.trimEnd()}\n`);
  console.log("\nwrote BENCHMARKS.md");
}

// --- clean up: only this run's keys ----------------------------------------------------------

await cleanUp();
io.disconnect();
await nr.close();
await ptClient.close();

function fmt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

function version(name: string): string {
  try {
    const path = new URL(`../node_modules/${name}/package.json`, import.meta.url);
    return (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version;
  } catch {
    return "?";
  }
}

async function cleanUp(): Promise<void> {
  let deleted = 0;
  let cursor = "0";
  do {
    const [nextCursor, keys] = await io.scan(cursor, "MATCH", `${RUN}*`, "COUNT", 1_000);
    cursor = nextCursor;
    if (keys.length > 0) deleted += await io.unlink(...keys);
  } while (cursor !== "0");
  console.error(`deleted ${deleted} keys under ${RUN}`);
}
