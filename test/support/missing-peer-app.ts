// An application as users deploy it, bundled (esbuild, drivers left external) and run where an
// optional peer is not installed. It prints one JSON line per event, in order: each log line
// of its logger, "built" once the surface exists and its start-up lines had their chance, then
// what a push or a pull message got. Run: node app.mjs <scenario>.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import { FirestoreLock } from "../../src/backends/firestore/index.js";
import { SpannerLock } from "../../src/backends/spanner/index.js";
import { InMemoryLock, idempotentHttp, idempotentMessage, type Logger } from "../../src/index.js";
import { fakeMessage, pushBody } from "../../src/testing/messages.js";
import { createTestIdentity } from "../../src/testing/push-auth.js";

const print = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
let errors = 0;
const logger: Logger = {
  info: (message) => print({ event: "log", severity: "INFO", message }),
  warn: (message) => print({ event: "log", severity: "WARNING", message }),
  error: (message) => {
    errors += 1;
    print({ event: "log", severity: "ERROR", message });
  },
};

/** Wait until the start-up ERROR line came, or give up after `ms` (then the test fails). */
async function startupLines(ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (errors === 0 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 5));
}

async function push(): Promise<void> {
  const identity = createTestIdentity();
  const handler = idempotentHttp(
    { backend: new InMemoryLock(), logger, auth: identity.auth },
    async () => {},
  );
  await startupLines(10_000);
  print({ event: "built" });
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  const response = await fetch(`http://127.0.0.1:${port}/`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: identity.authorization() },
    body: JSON.stringify(pushBody({ order: 4711 })),
  });
  print({ event: "push", status: response.status });
  // A push without a token is refused before the library is needed: 401 all the same.
  const anonymous = await fetch(`http://127.0.0.1:${port}/`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(pushBody({ order: 4712 })),
  });
  print({ event: "anonymous push", status: anonymous.status });
  server.close();
}

async function pull(backend: { claim(key: string, leaseMs: number): Promise<unknown> }) {
  const listener = idempotentMessage({ backend: backend as DatastoreLock, logger }, async () => {});
  await startupLines(10_000);
  print({ event: "built" });
  const message = fakeMessage({ order: 4711 });
  await listener(message);
  print({ event: "message", settlements: message.settlements });
  try {
    await backend.claim("orders:4711", 60_000);
    print({ event: "claim", outcome: "resolved" });
  } catch (error) {
    const { name, message: text } = error as Error;
    print({ event: "claim", outcome: "rejected", name, message: text });
  }
}

const backends: Record<string, () => { claim(key: string, leaseMs: number): Promise<unknown> }> = {
  datastore: () => new DatastoreLock({ projectId: "test-project" }),
  firestore: () => new FirestoreLock({ projectId: "test-project" }),
  spanner: () =>
    new SpannerLock({ projectId: "test-project", instanceId: "main", databaseId: "db" }),
};

async function main(scenario: string): Promise<void> {
  if (scenario === "push") return push();
  if (scenario === "present") {
    // The driver is installed: built over it, the surface reports nothing.
    const backend = new DatastoreLock({ projectId: "test-project" });
    idempotentMessage({ backend, logger }, async () => {});
    await import("@google-cloud/datastore");
    await new Promise((done) => setImmediate(done));
    print({ event: "built" });
    return;
  }
  const make = backends[scenario];
  if (make === undefined) throw new Error(`unknown scenario ${scenario}`);
  return pull(make());
}

// No top-level await: the same source is bundled as CommonJS too.
main(process.argv[2] ?? "").catch((error: unknown) => {
  print({ event: "crashed", error: String(error) });
  process.exitCode = 1;
});
