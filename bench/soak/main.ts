/**
 * The soak: a million pushes through idempotentHttp on RedisLock over real HTTP, and a check
 * that nothing the server holds grows with the deliveries (docs/soak.md).
 *
 *   npm run soak                         1,000,000 pushes, a reading every 50,000
 *   npm run soak -- --pushes 60000       the CI form (under a minute)
 *   npm run soak -- --pushes N --interval N --concurrency N
 *
 * This process is the server: the library under test, measured at the end of each interval
 * with nothing in flight. The load runs in a child process (load.ts), so the client's
 * sockets, buffers and latency arrays are not counted as the library's, and the two sides
 * use both cores. Exit code 1, with one line per broken bound, when anything grew.
 */
import { fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import os from "node:os";
import {
  createTestIdentity,
  FORGED_PUSH_AUTH_STATUS,
  type ForgedPushAuthKind,
  type TestIdentity,
} from "gcp-pubsub-idempotency/testing";
import { BOUNDS, judge, type Sample, warmUpIntervals } from "./bounds.js";
import { measure } from "./measure.js";
import type { FromLoad, IntervalDone, ToLoad } from "./protocol.js";
import { startServer } from "./server.js";

const HELP = `npm run soak -- [--pushes N] [--interval N] [--concurrency N]

  --pushes N       pushes in all (default 1000000)
  --interval N     pushes between readings (default pushes / 20)
  --concurrency N  scenarios in flight at once (default 32; a contention pair is 2 pushes)
  --help           this text

Exit code 1 when a bound is broken (heap, RSS, active resources, CPU per push, p99) or an
answer was wrong.`;

/** More valid tokens than the verifier keeps (256), so its cache fills and evicts. */
const TOKENS = 512;
const TOKEN_EVERY = 64;
/** The load's agent opens at most two sockets a lane (load.ts). */
const MAX_SOCKETS_PER_LANE = 2;

function parseArgs(argv: readonly string[]) {
  const values: Record<string, number> = {};
  for (let k = 0; k < argv.length; k++) {
    const name = argv[k] ?? "";
    if (name === "--help") return undefined;
    if (!["--pushes", "--interval", "--concurrency"].includes(name)) {
      throw new Error(`unknown argument ${name}; see --help`);
    }
    const text = (argv[++k] ?? "").replaceAll("_", "");
    if (!/^[1-9]\d*$/.test(text)) throw new Error(`${name} needs a whole number above 0`);
    values[name.slice(2)] = Number(text);
  }
  const pushes = values.pushes ?? 1_000_000;
  const interval = values.interval ?? Math.max(1, Math.round(pushes / 20));
  return { pushes, interval, concurrency: values.concurrency ?? 32 };
}

function forgeries(identity: TestIdentity): (string | null)[] {
  return (Object.keys(FORGED_PUSH_AUTH_STATUS) as ForgedPushAuthKind[]).map(
    (kind) => identity.forge(kind) ?? null,
  );
}

const row = (cells: readonly (string | number)[]) => `| ${cells.join(" | ")} |`;

function sampleRow(s: Sample): string {
  return row([
    s.pushes.toLocaleString("en-US"),
    s.heapMiB.toFixed(1),
    s.rssMiB.toFixed(1),
    s.handles,
    s.connections,
    s.p50Ms.toFixed(2),
    s.p99Ms.toFixed(2),
    Math.round(s.rate).toLocaleString("en-US"),
    Math.round(s.cpuUsPerPush),
    s.storedKeys.toLocaleString("en-US"),
  ]);
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  if (options === undefined) {
    console.log(HELP);
    return 0;
  }
  const { pushes, interval, concurrency } = options;
  const intervals = Math.ceil(pushes / interval);
  const warmUp = warmUpIntervals(intervals);
  if (intervals - warmUp < 2) throw new Error("too few intervals: lower --interval");
  const identity = createTestIdentity({ audience: "https://soak.example.test/push" });
  const tokens = Array.from({ length: TOKENS }, () => identity.authorization());
  const server = await startServer(identity);
  console.log(
    `soak: ${pushes} pushes, a reading every ${interval} (warm-up ${warmUp} of ${intervals}), ${concurrency} in flight; Node ${process.version}, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(2)}`,
  );
  const header = ["pushes", "heap MiB", "RSS MiB", "handles", "connections", "p50 ms", "p99 ms"];
  header.push("pushes/s", "server CPU µs/push", "Redis keys");
  console.log(row(header));
  console.log(row(header.map(() => "---:")));

  const load = fork(new URL("./load.ts", import.meta.url), [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const toLoad = (message: ToLoad) => load.send(message);
  const samples: Sample[] = [];
  const started = Date.now();
  let last: IntervalDone | undefined;
  const finished = new Promise<void>((resolve, reject) => {
    load.on("message", (message: FromLoad) => {
      void (async () => {
        const storedKeys = await server.storedKeys();
        const reading = await measure(await server.connections());
        const pushed = message.pushes - (samples.at(-1)?.pushes ?? 0);
        const sample: Sample = {
          ...reading,
          pushes: message.pushes,
          p50Ms: message.p50Ms,
          p99Ms: message.p99Ms,
          rate: pushed / message.seconds,
          cpuUsPerPush: reading.cpuUs / pushed,
          storedKeys,
        };
        samples.push(sample);
        last = message;
        console.log(sampleRow(sample));
        toLoad({ type: "resume", forged: forgeries(identity) });
      })().catch(reject);
    });
    load.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`the load process exited with ${code}`)),
    );
  });
  toLoad({
    type: "config",
    url: server.url,
    pushes,
    interval,
    concurrency,
    tokens,
    tokenEvery: TOKEN_EVERY,
    forged: forgeries(identity),
    runId: randomUUID(),
  });
  try {
    await finished;
  } finally {
    await server.close();
  }
  const seconds = (Date.now() - started) / 1000;
  const broken = judge(samples, warmUp, MAX_SOCKETS_PER_LANE * concurrency);
  const { counters } = server;
  if (last === undefined) throw new Error("the load process reported nothing");
  if (last.unexpected.length > 0) {
    broken.push(`unexpected answers: ${last.unexpected.join("; ")}`);
  }
  if (counters.succeeded !== last.keys) {
    broken.push(`the handler succeeded ${counters.succeeded} times for ${last.keys} keys`);
  }
  console.log(
    `soak: ${last.pushes} pushes in ${seconds.toFixed(0)} s; statuses ${JSON.stringify(last.statuses)}; ${last.keys} keys, handler ${counters.succeeded} ok + ${counters.threw} thrown; log lines ${JSON.stringify(counters.lines)}`,
  );
  const base = samples[warmUp - 1];
  console.log(
    `soak: bounds from the reading after ${base?.pushes} pushes: heap ≤ ×${BOUNDS.heapFactor} + ${BOUNDS.heapSlackMiB} MiB, heap growth ≤ ${BOUNDS.heapBytesPerPush} B/push in a half at least, RSS ≤ ×${BOUNDS.rssFactor} + ${BOUNDS.rssSlackMiB} MiB, handles ≤ +${BOUNDS.handleSlack}, connections ≤ ${MAX_SOCKETS_PER_LANE * concurrency}, late CPU/push ≤ early ×${BOUNDS.cpuFactor}, late p99 ≤ early ×${BOUNDS.p99Factor} + ${BOUNDS.p99SlackMs} ms; handles at the end ${JSON.stringify(samples.at(-1)?.handleTypes)}`,
  );
  if (broken.length === 0) {
    console.log("soak: passed: nothing grew with the deliveries");
    return 0;
  }
  console.error(
    `soak: FAILED, ${broken.length} bound(s) broken:\n${broken.map((b) => `  ${b}`).join("\n")}`,
  );
  return 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`soak: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
