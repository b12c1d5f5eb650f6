// The soak's load process: pushes over keep-alive HTTP to the server process, in a fixed mix
// of scenarios, and stops at each interval's end with nothing in flight, so the server
// measures itself at rest. Run by main.ts through fork(); not a command of its own.
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import { EXPECTED, type FromLoad, type LoadConfig, type ToLoad } from "./protocol.js";

type Kind = "first" | "duplicate" | "contention" | "failure" | "refused";

/** At most this many unexpected answers are quoted; all are counted. */
const QUOTED = 20;

function send(message: FromLoad): void {
  process.send?.(message);
}

const incoming: ToLoad[] = [];
let waiting: ((message: ToLoad) => void) | undefined;
process.on("message", (message: ToLoad) => {
  if (waiting) {
    const resolve = waiting;
    waiting = undefined;
    resolve(message);
  } else incoming.push(message);
});
function next(): Promise<ToLoad> {
  const queued = incoming.shift();
  return queued ? Promise.resolve(queued) : new Promise((resolve) => (waiting = resolve));
}

async function run(config: LoadConfig): Promise<void> {
  const url = new URL(config.url);
  // Two pushes a lane at most (a contention pair): every lane always finds a free socket.
  const agent = new Agent({ keepAlive: true, maxSockets: config.concurrency * 2 });
  const statuses: Record<string, number> = {};
  const unexpected: string[] = [];
  let forged = config.forged;
  let latencies: number[] = [];
  let issued = 0;
  let answered = 0;
  let keys = 0;
  let units = 0;

  const push = (key: string, kind: Kind, attempt: number, auth: string | null): Promise<number> => {
    issued += 1;
    const body = JSON.stringify({
      message: {
        data: "c29haw==",
        messageId: key,
        publishTime: new Date().toISOString(),
        attributes: { kind },
      },
      subscription: "projects/soak/subscriptions/soak",
      deliveryAttempt: attempt,
    });
    const headers: Record<string, string | number> = {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
    };
    if (auth !== null) headers.authorization = auth;
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const req = request(
        { host: url.hostname, port: url.port, path: url.pathname, method: "POST", agent, headers },
        (res) => {
          res.resume();
          res.on("end", () => {
            latencies.push(performance.now() - started);
            answered += 1;
            const status = res.statusCode ?? 0;
            statuses[status] = (statuses[status] ?? 0) + 1;
            resolve(status);
          });
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  };
  const expect = (kind: Kind, status: number, allowed: number | readonly number[]): void => {
    const ok = typeof allowed === "number" ? status === allowed : allowed.includes(status);
    if (ok) return;
    if (unexpected.length < QUOTED) unexpected.push(`${kind} answered ${status}`);
    else unexpected[QUOTED - 1] = `… ${unexpected.length} or more unexpected answers`;
  };
  const token = () =>
    config.tokens[Math.floor(issued / config.tokenEvery) % config.tokens.length] ?? null;

  // One scenario: 20 in turn make 38 pushes (first deliveries 15, their duplicates and
  // redeliveries 15, contended copies 3, refused 5).
  const unit = async (): Promise<void> => {
    const n = units++;
    const slot = n % 20;
    const key = `${config.runId}-${n}`;
    if (slot < 10) {
      expect("first", await push(key, "first", 1, token()), EXPECTED.delivered);
      expect("duplicate", await push(key, "duplicate", 2, token()), EXPECTED.delivered);
      keys += 1;
    } else if (slot < 13) {
      // Two copies at once; the handler of a contention key takes 5 ms, so one meets it held.
      const pair = await Promise.all([
        push(key, "contention", 1, token()),
        push(key, "contention", 1, token()),
      ]);
      if (!pair.includes(EXPECTED.delivered)) expect("contention", pair[0] ?? 0, 204);
      for (const status of pair) {
        expect("contention", status, EXPECTED.contended);
        if (status === 503) {
          expect("contention", await push(key, "contention", 2, token()), EXPECTED.delivered);
        }
      }
      keys += 1;
    } else if (slot < 15) {
      expect("failure", await push(key, "failure", 1, token()), EXPECTED.failed);
      expect("failure", await push(key, "failure", 2, token()), EXPECTED.delivered);
      keys += 1;
    } else {
      const auth = forged[n % forged.length] ?? null;
      expect("refused", await push(key, "refused", 1, auth), EXPECTED.refused);
    }
  };

  for (let boundary = config.interval; ; boundary += config.interval) {
    const end = Math.min(boundary, config.pushes);
    const intervalStart = performance.now();
    const lane = async (): Promise<void> => {
      while (issued < end) await unit();
    };
    await Promise.all(Array.from({ length: config.concurrency }, lane));
    const sorted = Float64Array.from(latencies).sort();
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
    send({
      type: "interval",
      pushes: answered,
      keys,
      seconds: (performance.now() - intervalStart) / 1000,
      p50Ms: at(0.5) ?? 0,
      p99Ms: at(0.99) ?? 0,
      statuses: { ...statuses },
      unexpected: [...unexpected],
    });
    latencies = [];
    // The last reading too waits for the server: until then the sockets stay as they were.
    const resume = await next();
    if (issued >= config.pushes) break;
    if (resume.type === "resume") forged = resume.forged;
  }
  agent.destroy();
}

const first = await next();
if (first.type !== "config") throw new Error("soak load: expected the config first");
await run(first);
process.disconnect?.();
