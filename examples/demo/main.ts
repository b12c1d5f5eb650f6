/**
 * A Pub/Sub delivery storm against a real local push endpoint built with idempotentHttp.
 * Run `npm run demo -- --help` for what it does and the options.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { fork } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { idempotentHttp, type LockBackend, type Logger, lock, step } from "gcp-pubsub-idempotency";
import { pushBody, simulatePushDeliveries, warmUpBackend } from "gcp-pubsub-idempotency/testing";
// The supplier: a local stand-in for a vendor API that de-duplicates on the Idempotency-Key
// header ("key your sink"), shared with the functional suite.
import { sendOrder, startSupplier } from "../../test/support/supplier.js";
import {
  BACKENDS,
  type BackendConfig,
  type BackendName,
  isBackendName,
  openBackend,
  sqlitePathFor,
} from "./backends.js";
import type { CrashJob } from "./crash-worker.js";

// The crashed worker's lease is short so the demo heals in about a second (on a slow
// store, ten times its slowest call, up to MAX_CRASH_LEASE_MS: well within the storm's
// redeliveries); the gateway's own lease stays long, so a body slowed by the storm never
// outruns it.
const CRASH_LEASE_MS = 1000;
const MAX_CRASH_LEASE_MS = 4000;
const LEASE_MS = 10_000;

const HELP = `npm run demo -- [options]

A delivery storm the way Pub/Sub makes one, against a real local HTTP push endpoint
wrapped with idempotentHttp (key: the order id attribute, "order:<id>"). Every order is
delivered 3 times, 2 of them at the same moment; a non-2xx answer (503 contention, 500
failure) is redelivered with exponential backoff. Some orders fail once in the body (a
transient supplier error, nack), and some are first taken by a worker that crashes
mid-body: it sends the order to the supplier and exits before complete, so its claim
stays until its ${CRASH_LEASE_MS} ms lease lapses and a redelivery heals it (fence 2); on a
slow store that lease is ten times its slowest call, up to ${MAX_CRASH_LEASE_MS} ms. The body sends
each order to a local supplier that de-duplicates on the Idempotency-Key header, so the
crash's re-send is a no-op there ("key your sink"). The gateway's own lease is
${LEASE_MS / 1000} s, so a body slowed by the storm never outruns it.

Options:
  --orders N          orders to deliver (default 2000)
  --backend NAME      ${Object.entries(BACKENDS)
    .map(([name, b]) => `${name}: ${b.describe}`)
    .join("\n                      ")}
                      default sqlite. With memory, the store cannot be shared with
                      another process, so the crash runs in-process: the demo claims the
                      key, sends to the supplier and abandons the claim. With the others the
                      crash is a real child process (child_process.fork) that exits.
  --redis-url URL     Redis server (else REDIS_URL, else redis://127.0.0.1:6379); each run
                      uses its own key prefix and removes its keys at the end
  --sqlite-file PATH  SQLite file (default: a new file per run in the temp folder)
  --database-url URL  PostgreSQL (else DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test)
  --mysql-url URL     MySQL/MariaDB (else MYSQL_URL, else mysql://root@127.0.0.1:3306/test);
                      PostgreSQL and MySQL runs use a table of their own, dropped at the end
  --wait-ms N         the gateway's waitMs: how long a held key is retried before a 503
                      (default 100)
  --seed N            seed for which orders fail or crash (default 1)
  --sink NAME         supplier (default): the body sends each order to the local supplier,
                      which de-duplicates on the Idempotency-Key header ("key your sink").
                      transaction: the body is one plain INSERT into an orders table of the
                      run's own with NO unique constraint, in the store's transaction
                      (idempotentHttp with transaction: true), so DONE commits with the row
                      and no Idempotency-Key is needed anywhere; the crash worker inserts and
                      dies before the commit. SQL backends only (sqlite, postgres, mysql).
                      steps: the body is three steps, step("charge") → step("ship") →
                      step("email"), each a call the supplier counts WITHOUT de-duplicating;
                      the failing orders throw between the charge and the shipment, the
                      crash worker dies after the charge. Each step must reach the supplier
                      exactly once per order: its recorded result is replayed on the retry.
  --help              this text

Exit code 0 only when every order is acked and held by the sink exactly once.`;

const CRASH_SHARE = 0.05;
const FAIL_SHARE = 0.05;
const IN_FLIGHT = 64;
const CRASH_WORKERS = 2;

function fail(text: string): never {
  console.error(text);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    orders: { type: "string", default: "2000" },
    backend: { type: "string", default: "sqlite" },
    "redis-url": { type: "string" },
    "sqlite-file": { type: "string" },
    "database-url": { type: "string" },
    "mysql-url": { type: "string" },
    "wait-ms": { type: "string", default: "100" },
    seed: { type: "string", default: "1" },
    sink: { type: "string", default: "supplier" },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const orderCount = Number(values.orders);
const waitMs = Number(values["wait-ms"]);
let seed = Number(values.seed);
if (!Number.isSafeInteger(orderCount) || orderCount < 1)
  fail("--orders must be a positive integer");
if (!Number.isSafeInteger(waitMs) || waitMs < 0) fail("--wait-ms must be a non-negative integer");
if (!Number.isSafeInteger(seed)) fail("--seed must be an integer");
const backendName = values.backend;
if (!isBackendName(backendName)) fail(`unknown --backend ${backendName}; try --help`);
const name: BackendName = backendName;
const sinkName = values.sink;
if (sinkName !== "supplier" && sinkName !== "transaction" && sinkName !== "steps")
  fail(`unknown --sink ${sinkName}: supplier, transaction or steps`);
const steps = sinkName === "steps";

// A small deterministic PRNG, so a seed reproduces which orders fail or crash.
function random(): number {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}

const runId = `${Date.now().toString(36)}-${process.pid}`;
const config: BackendConfig = {
  runId,
  redisUrl: values["redis-url"] ?? process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  sqlitePath: values["sqlite-file"] ?? sqlitePathFor(runId),
  databaseUrl:
    values["database-url"] ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test",
  mysqlUrl: values["mysql-url"] ?? process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test",
};
let opened: Awaited<ReturnType<typeof openBackend>>;
try {
  opened = await openBackend(name, config);
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}
const sink = sinkName === "transaction" ? opened.sink : undefined;
if (sinkName === "transaction" && !sink) {
  await opened.close({ cleanup: true });
  fail(`--sink transaction needs a SQL backend (sqlite, postgres, mysql), not ${name}`);
}

// Per-delivery context, so the backend wrapper can tell which delivery met a held key.
const delivery = new AsyncLocalStorage<{ metHeld: boolean }>();
const counts = {
  bodies: 0,
  duplicates: 0,
  contention: 0,
  savedByWait: 0,
  transient: 0,
  healed: new Set<string>(),
  unexpected: [] as string[],
};

// The real backend, with a look at each claim's outcome (the gateway itself is unchanged).
const inner = opened.lock;
const backend: LockBackend = {
  async claim(key, leaseMs, claimOptions) {
    const outcome = await inner.claim(key, leaseMs, claimOptions);
    const ctx = delivery.getStore();
    if (ctx && outcome.status === "held") ctx.metHeld = true;
    return outcome;
  },
  complete: (claim, result) => inner.complete(claim, result),
  release: (claim) => inner.release(claim),
  supports: inner.supports,
};

const quiet: Logger = {
  info() {},
  warn() {},
  error(message, fields) {
    if (fields?.reason !== "Error: transient supplier error")
      counts.unexpected.push(`${message} ${JSON.stringify(fields)}`);
  },
};

const supplier = await startSupplier();
const orders = Array.from({ length: orderCount }, (_, i) => {
  const orderId = `po-${String(i + 1).padStart(5, "0")}`;
  const roll = random();
  const fate = roll < CRASH_SHARE ? "crash" : roll < CRASH_SHARE + FAIL_SHARE ? "fail" : "plain";
  return { orderId, key: `order:${orderId}`, fate };
});
const failOnce = new Set(orders.filter((o) => o.fate === "fail").map((o) => o.orderId));
const crashed = new Set(orders.filter((o) => o.fate === "crash").map((o) => o.orderId));

const gateway = {
  leaseMs: LEASE_MS,
  waitMs,
  logger: quiet,
  key: ({ message }: { message: { attributes: Readonly<Record<string, string>> } }) =>
    message.attributes.orderId ? `order:${message.attributes.orderId}` : undefined,
  onDuplicate: () => {
    counts.duplicates += 1;
  },
};
/** What both sinks' bodies share: the count, the transient failure, the crash healed. */
function bodyRuns(orderId: string): void {
  counts.bodies += 1;
  if (failOnce.delete(orderId)) throw new Error("transient supplier error");
  if (crashed.has(orderId)) counts.healed.add(orderId);
}
/** One step's call to the supplier, counted per arrival (`<order>:<step>`), never de-duplicated. */
async function sendStep(orderId: string, name: string, seen: string): Promise<string> {
  await sendOrder(supplier.url, `${orderId}:${name}`, `${name}:${orderId}:${Math.random()}`);
  return `${name}-of-${orderId}${seen ? ` after ${seen}` : ""}`;
}
const handler = steps
  ? // Three steps, each recorded: a redelivery replays the ones that finished.
    idempotentHttp({ ...gateway, backend, steps: true }, async (message) => {
      const orderId = message.attributes.orderId ?? "";
      counts.bodies += 1;
      const charge = await step("charge", () => sendStep(orderId, "charge", ""));
      if (failOnce.delete(orderId)) throw new Error("transient supplier error");
      if (crashed.has(orderId)) counts.healed.add(orderId);
      const ship = await step("ship", () => sendStep(orderId, "ship", charge));
      await step("email", () => sendStep(orderId, "email", ship));
    })
  : sink
    ? // The order row and DONE commit together: a plain INSERT, no key at the sink.
      idempotentHttp(
        {
          ...gateway,
          backend: {
            ...backend,
            completeInTransaction: sink.lock.completeInTransaction.bind(sink.lock),
          },
          transaction: true,
        },
        async (message, tx) => {
          const orderId = message.attributes.orderId ?? "";
          await sink.insert(tx, orderId);
          bodyRuns(orderId);
        },
      )
    : idempotentHttp({ ...gateway, backend }, async (message, _req, _res) => {
        const orderId = message.attributes.orderId ?? "";
        bodyRuns(orderId);
        await sendOrder(supplier.url, orderId, `order:${orderId}`);
      });
const push = createServer((req, res) => {
  const ctx = { metHeld: false };
  res.on("finish", () => {
    if (res.statusCode === 503) counts.contention += 1;
    else if (ctx.metHeld) counts.savedByWait += 1;
    if (res.statusCode === 500) counts.transient += 1;
  });
  delivery.run(ctx, () => handler(req, res));
});
await new Promise<void>((done) => push.listen(0, "127.0.0.1", done));
const pushUrl = `http://127.0.0.1:${(push.address() as AddressInfo).port}/`;

// Warm up the HTTP client, so the storm's first deliveries are not late behind its setup,
// and the store (a connection to open, an emulator's first writes), on keys of its own.
await sendOrder(supplier.url, "warm-up", "warm-up");
supplier.arrivals.clear();
supplier.accepted.clear();
await warmUpBackend(inner, { keyPrefix: `warm-up:${process.pid}:` });

// The crash: before the storm, a worker takes the crash orders and dies mid-body.
const crashOrders = orders.filter((o) => o.fate === "crash");
if (crashOrders.length > 0) {
  if (BACKENDS[name].shared) {
    const workerPath = fileURLToPath(new URL("./crash-worker.ts", import.meta.url));
    const loader = fileURLToPath(new URL("../../scripts/text-loader.mjs", import.meta.url));
    const slices = Array.from({ length: CRASH_WORKERS }, (_, w) =>
      crashOrders.filter((_, i) => i % CRASH_WORKERS === w),
    ).filter((s) => s.length > 0);
    await Promise.all(
      slices.map(
        (slice) =>
          new Promise<void>((done, reject) => {
            const child = fork(workerPath, [], {
              execArgv: ["--import", "tsx", "--import", loader],
              stdio: ["ignore", "inherit", "inherit", "ipc"],
            });
            const job: CrashJob = {
              backend: name,
              config,
              supplierUrl: supplier.url,
              leaseMs: CRASH_LEASE_MS,
              maxLeaseMs: MAX_CRASH_LEASE_MS,
              orders: slice.map(({ orderId, key }) => ({ orderId, key })),
              transaction: sink !== undefined,
              steps,
            };
            child.once("spawn", () => child.send(job));
            child.once("exit", (code) =>
              code === 0 ? done() : reject(new Error(`crash worker exited with ${code}`)),
            );
          }),
      ),
    );
  } else {
    // In-process stand-in: claim, send, and abandon the claim as a dead process would.
    await Promise.all(
      crashOrders.map(async ({ orderId, key }) => {
        if (steps) {
          // The charge step recorded, then a holder that never comes back.
          const charged = new Promise<void>((done) => {
            void lock(
              key,
              { backend: inner, leaseMs: CRASH_LEASE_MS, logger: quiet, steps: true },
              async () => {
                await step("charge", () => sendStep(orderId, "charge", ""));
                done();
                return new Promise<never>(() => {});
              },
            );
          });
          await charged;
          return;
        }
        const outcome = await inner.claim(key, CRASH_LEASE_MS); // memory: the supplier sink only
        if (outcome.status !== "won") throw new Error(`crash claim of ${key}: ${outcome.status}`);
        await sendOrder(supplier.url, orderId, key);
      }),
    );
  }
}

// Progress: a bar on a terminal, a plain line every ~10% otherwise.
const tty = process.stdout.isTTY === true;
let finished = 0;
let lastTenth = -1;
function progress(): void {
  const share = finished / orderCount;
  if (tty) {
    const width = 30;
    const full = Math.round(share * width);
    process.stdout.write(
      `\r[${"#".repeat(full)}${".".repeat(width - full)}] ${finished}/${orderCount} orders`,
    );
    if (finished === orderCount) process.stdout.write("\n");
  } else {
    const tenth = Math.floor(share * 10);
    if (tenth !== lastTenth) {
      lastTenth = tenth;
      console.log(`progress: ${finished}/${orderCount} orders settled`);
    }
  }
}

const started = Date.now();
let deliveries = 0;
const unacked: string[] = [];
let next = 0;
// The dead worker's messages are redelivered first, while its claims are still live.
const queue = [...crashOrders, ...orders.filter((o) => o.fate !== "crash")];
progress();
// A bounded pool of orders in flight, each one a full Pub/Sub delivery storm of its own.
await Promise.all(
  Array.from({ length: Math.min(IN_FLIGHT, orderCount) }, async () => {
    while (next < queue.length) {
      const order = queue[next++];
      if (!order) break;
      const report = await simulatePushDeliveries({
        url: pushUrl,
        messages: [
          pushBody({ orderId: order.orderId }, { attributes: { orderId: order.orderId } }),
        ],
        copies: 3,
        concurrency: 2,
        maxRedeliveries: 8,
        backoffMs: 40,
      });
      deliveries += report.deliveries;
      if (report.unacked.length > 0) unacked.push(order.orderId);
      finished += 1;
      progress();
    }
  }),
);
const seconds = (Date.now() - started) / 1000;

let once = 0;
let more = 0;
let never = 0;
let reSends = 0;
const rows = sink ? await sink.rowsByOrder() : undefined;
for (const { orderId } of orders) {
  const n = rows ? (rows.get(orderId) ?? 0) : (supplier.accepted.get(orderId) ?? 0);
  if (n === 1) once += 1;
  else if (n > 1) more += 1;
  else never += 1;
  if (!rows) reSends += (supplier.arrivals.get(orderId) ?? 0) - n;
}
const at = rows ? "in the orders table" : "at supplier";
/** Per step: orders whose step reached the supplier once, more often, never (every arrival). */
const stepRows: [string, number][] = [];
let stepsOnce = 0;
for (const name of ["charge", "ship", "email"]) {
  const tally = [0, 0, 0];
  for (const { orderId } of orders) {
    const n = supplier.arrivals.get(`${orderId}:${name}`) ?? 0;
    tally[n === 1 ? 0 : n > 1 ? 1 : 2]! += 1;
  }
  stepRows.push(
    [`${name} calls exactly once`, tally[0]!],
    [`${name} calls more than once`, tally[1]!],
    [`${name} calls never`, tally[2]!],
  );
  if (tally[0] === orderCount) stepsOnce += 1;
}

const table: [string, string | number][] = [
  ["backend", `${name}${BACKENDS[name].shared ? "" : " (crash simulated in-process)"}`],
  [
    "sink",
    steps
      ? "three steps (charge, ship, email), each counted at the supplier without de-duplication"
      : sink
        ? "plain INSERTs in the store's transaction (no unique constraint, no Idempotency-Key)"
        : "the supplier, de-duplicating on Idempotency-Key",
  ],
  ["orders", orderCount],
  ["deliveries", deliveries],
  ["bodies run", counts.bodies],
  ["duplicates skipped", counts.duplicates],
  ["contention nacks (503)", counts.contention],
  [`nacks saved by waitMs=${waitMs}`, counts.savedByWait],
  ["transient failures (500)", counts.transient],
  ["crashes healed", `${counts.healed.size}/${crashOrders.length}`],
  ...(steps
    ? stepRows
    : [
        ...(sink ? [] : [["re-sends de-duplicated by supplier", reSends] as [string, number]]),
        [`orders ${at} exactly once`, once] as [string, number],
        [`orders ${at} more than once`, more] as [string, number],
        [`orders ${at} never`, never] as [string, number],
      ]),
  ["orders never acked", unacked.length],
  ["time", `${seconds.toFixed(1)} s`],
];
const width = Math.max(...table.map(([label]) => label.length));
console.log("");
for (const [label, value] of table) console.log(`  ${label.padEnd(width)}  ${value}`);
for (const line of counts.unexpected.slice(0, 5)) console.error(`unexpected: ${line}`);

const ok =
  (steps ? stepsOnce === 3 : once === orderCount) &&
  unacked.length === 0 &&
  counts.healed.size === crashOrders.length &&
  counts.unexpected.length === 0;
console.log(
  ok
    ? `\nOK: every order acked and ${steps ? "each of its steps at the supplier" : rows ? "in the orders table" : "at the supplier"} exactly once`
    : "\nFAILED",
);

await new Promise<void>((done) => {
  push.close(() => done());
  push.closeAllConnections();
});
await supplier.close();
await opened.close({ cleanup: true });
process.exitCode = ok ? 0 : 1;
