import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, expect, it, vi } from "vitest";
import { findOrStartRedis } from "../support/redis.js";
import { emulatorOrSkip, startOrSkip } from "../support/required.js";

const run = promisify(execFile);
const FLAGS = ["--import", "tsx", "--import", "./scripts/text-loader.mjs", "examples/demo/main.ts"];
// A demo run takes 5-15 s on an idle machine and several times that on a busy one (two more
// processes compile with tsx, a cold emulator's first writes take seconds): these bounds only
// catch a hang. Each test's timeout leaves room for its run and, where it starts one, for
// the emulator's start.
const DEMO_TIMEOUT_MS = 120_000;
vi.setConfig({ testTimeout: DEMO_TIMEOUT_MS + 10_000 });

async function demo(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...FLAGS, ...args], {
      timeout: DEMO_TIMEOUT_MS,
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** The value of one row of the final table. */
function row(stdout: string, label: string): string {
  const line = stdout.split("\n").find((l) => l.trimStart().startsWith(label));
  if (!line) throw new Error(`no "${label}" row in:\n${stdout}`);
  return line.trim().slice(label.length).trim();
}

function expectCleanRun(result: { code: number; stdout: string; stderr: string }, orders: number) {
  // Anything on stderr is a failure: a network guard refusal (the demo and its crash workers
  // inherit the guard through NODE_OPTIONS) or google-auth-library's MetadataLookupWarning,
  // which would mean a client looked for a GCE metadata server.
  expect(result.stderr.trim()).toBe("");
  expect(result.code).toBe(0);
  const { stdout } = result;
  expect(row(stdout, "orders at supplier exactly once")).toBe(String(orders));
  expect(row(stdout, "orders at supplier more than once")).toBe("0");
  expect(row(stdout, "orders at supplier never")).toBe("0");
  expect(row(stdout, "orders never acked")).toBe("0");
  // Each order is delivered 3 times; every copy beyond the one that ran is skipped.
  expect(Number(row(stdout, "duplicates skipped"))).toBe(2 * orders);
  expect(Number(row(stdout, "deliveries"))).toBeGreaterThanOrEqual(3 * orders);
  // The crashed claims are still live when their redeliveries start: held, then healed.
  const held =
    Number(row(stdout, "contention nacks (503)")) +
    Number(row(stdout, "nacks saved by waitMs=100"));
  expect(held).toBeGreaterThan(0);
  const [healed, crashed] = row(stdout, "crashes healed").split("/").map(Number);
  expect(crashed).toBeGreaterThan(0);
  expect(healed).toBe(crashed);
  // The crash sent before dying; its redelivery re-sent and the supplier dropped it.
  expect(row(stdout, "re-sends de-duplicated by supplier")).toBe(String(crashed));
  expect(stdout).toContain("OK: every order acked and at the supplier exactly once");
}

const redis = await startOrSkip("Redis", findOrStartRedis);
afterAll(async () => {
  await redis?.stop();
});

// --seed 3 gives crash and transient-failure orders among the first 60.
it("demo on memory: every order at the supplier exactly once, exit 0", async () => {
  const result = await demo(["--orders", "60", "--seed", "3", "--backend", "memory"]);
  expectCleanRun(result, 60);
  expect(row(result.stdout, "backend")).toBe("memory (crash simulated in-process)");
});

it("demo with no options: SQLite, real crashing child processes, exit 0", async () => {
  const result = await demo(["--orders", "60", "--seed", "3"]);
  expectCleanRun(result, 60);
  expect(row(result.stdout, "backend")).toBe("sqlite");
});

it.each(["postgres", "mysql"])("demo on %s: exit 0, every order exactly once", async (backend) => {
  const result = await demo(["--orders", "60", "--seed", "3", "--backend", backend]);
  expectCleanRun(result, 60);
  expect(row(result.stdout, "backend")).toBe(backend);
});

it.skipIf(!redis)(
  "demo on redis: a real crashing child process heals after its lease, exit 0",
  async () => {
    const result = await demo([
      "--orders",
      "60",
      "--seed",
      "3",
      "--backend",
      "redis",
      "--redis-url",
      redis!.url,
    ]);
    expectCleanRun(result, 60);
    expect(row(result.stdout, "backend")).toBe("redis");
  },
);

it.each(["sqlite", "postgres", "mysql"])(
  "demo --sink transaction on %s: plain INSERTs, every order in the table exactly once, exit 0",
  async (backend) => {
    const result = await demo([
      "--orders",
      "60",
      "--seed",
      "3",
      "--sink",
      "transaction",
      "--backend",
      backend,
    ]);
    expect(result.stderr.trim()).toBe("");
    expect(result.code).toBe(0);
    const { stdout } = result;
    expect(row(stdout, "sink")).toContain("plain INSERTs");
    expect(row(stdout, "orders in the orders table exactly once")).toBe("60");
    expect(row(stdout, "orders in the orders table more than once")).toBe("0");
    expect(row(stdout, "orders in the orders table never")).toBe("0");
    expect(row(stdout, "orders never acked")).toBe("0");
    expect(Number(row(stdout, "duplicates skipped"))).toBe(2 * 60);
    const [healed, crashed] = row(stdout, "crashes healed").split("/").map(Number);
    expect(crashed).toBeGreaterThan(0);
    expect(healed).toBe(crashed);
    // No supplier, so no Idempotency-Key anywhere: nothing for a supplier to de-duplicate.
    expect(stdout).not.toContain("re-sends de-duplicated");
    expect(stdout).toContain("OK: every order acked and in the orders table exactly once");
  },
);

it.each(["memory", "postgres"])(
  "demo --sink steps on %s: a failure or a crash between steps, every step at the supplier exactly once, exit 0",
  async (backend) => {
    const result = await demo([
      "--orders",
      "60",
      "--seed",
      "3",
      "--sink",
      "steps",
      "--backend",
      backend,
    ]);
    expect(result.stderr.trim()).toBe("");
    expect(result.code).toBe(0);
    const { stdout } = result;
    for (const name of ["charge", "ship", "email"]) {
      expect(row(stdout, `${name} calls exactly once`)).toBe("60");
      expect(row(stdout, `${name} calls more than once`)).toBe("0");
    }
    // Some orders failed, and some holders died, after their charge: the retry replayed it.
    expect(Number(row(stdout, "transient failures (500)"))).toBeGreaterThan(0);
    const [healed, crashed] = row(stdout, "crashes healed").split("/").map(Number);
    expect(crashed).toBeGreaterThan(0);
    expect(healed).toBe(crashed);
    expect(stdout).toContain(
      "OK: every order acked and each of its steps at the supplier exactly once",
    );
  },
);

it("demo --sink transaction refuses a store without transactions, exit 2", async () => {
  const result = await demo(["--sink", "transaction", "--backend", "memory"]);
  expect(result.code).toBe(2);
  expect(result.stderr).toContain("--sink transaction needs a SQL backend");
});

it("demo --help explains the options and the in-process crash on memory", async () => {
  const result = await demo(["--help"]);
  expect(result.code).toBe(0);
  for (const word of ["--orders", "--backend", "--redis-url", "REDIS_URL", "in-process", "waitMs"])
    expect(result.stdout).toContain(word);
});

it("demo rejects an unknown backend with exit code 2", async () => {
  const result = await demo(["--backend", "nope"]);
  expect(result.code).toBe(2);
  expect(result.stderr).toContain("unknown --backend");
});

it.for([
  ["datastore", "DATASTORE_EMULATOR_HOST"],
  ["firestore", "FIRESTORE_EMULATOR_HOST"],
] as const)(
  "demo on %s (official emulator): exit 0, every order exactly once",
  { timeout: DEMO_TIMEOUT_MS + 70_000 },
  async ([backend, variable], ctx) => {
    const emulator = await emulatorOrSkip(backend, ctx);
    if (!emulator) return;
    try {
      const result = await demo(["--orders", "40", "--seed", "3", "--backend", backend], {
        [variable]: emulator.host,
        GOOGLE_CLOUD_PROJECT: "idempotency-demo",
      });
      expectCleanRun(result, 40);
      expect(row(result.stdout, "backend")).toBe(backend);
    } finally {
      await emulator.stop();
    }
  },
);
