// An optional peer that is not installed, as a user meets it: the application bundled (esbuild,
// packages left external, as the CLI test and most deploys do) and run from a directory where
// the package cannot be found. Nothing is uninstalled: the bundle simply has no node_modules.
// Each ERROR line must come when the surface is built, before any message; the message itself
// is still never acked; the backend's own call names the package and `npm install`.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const entry = join(root, "test/support/missing-peer-app.ts");

interface Event {
  event: string;
  severity?: string;
  message?: string;
  status?: number;
  settlements?: string[];
  outcome?: string;
  name?: string;
}

async function bundle(dir: string): Promise<void> {
  for (const format of ["esm", "cjs"] as const) {
    await build({
      entryPoints: [entry],
      outfile: join(dir, format === "esm" ? "app.mjs" : "app.cjs"),
      bundle: true,
      platform: "node",
      format,
      target: "node20",
      packages: "external",
      loader: { ".lua": "text", ".sql": "text" },
      logLevel: "error",
    });
  }
}

function run(dir: string, file: string, scenario: string): Promise<Event[]> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [join(dir, file), scenario], {
      cwd: dir,
      env: { ...process.env, NODE_PATH: "", METADATA_SERVER_DETECTION: "none" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", fail);
    child.on("close", (code) => {
      const events = stdout
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Event);
      if (code !== 0) fail(new Error(`exit ${code}: ${stderr}\n${stdout}`));
      else done(events);
    });
  });
}

/** The ERROR lines logged before the surface was built and any message sent. */
function atStartup(events: Event[]): string[] {
  const built = events.findIndex((e) => e.event === "built");
  expect(built).toBeGreaterThanOrEqual(0);
  return events
    .slice(0, built)
    .filter((e) => e.severity === "ERROR")
    .map((e) => e.message ?? "");
}

// Outside the repository: no node_modules above it, so no optional peer resolves.
let missing: string;
// Inside it, for a bundle whose drivers are all installed.
let present: string;

beforeAll(async () => {
  missing = mkdtempSync(join(tmpdir(), "missing-peer-"));
  mkdirSync(join(root, ".tmp"), { recursive: true });
  present = mkdtempSync(join(root, ".tmp", "present-peer-"));
  await Promise.all([bundle(missing), bundle(present)]);
}, 60_000);

afterAll(() => {
  rmSync(missing, { recursive: true, force: true });
  rmSync(present, { recursive: true, force: true });
});

describe.each(["app.mjs", "app.cjs"])("a bundled application (%s)", (file) => {
  it("with push auth and no google-auth-library: an ERROR line at start-up, then 503", async () => {
    const events = await run(missing, file, "push");
    expect(atStartup(events)).toEqual([
      "push authentication needs google-auth-library, which is not installed: npm install google-auth-library; until then every push is answered 503 and redelivered",
    ]);
    expect(events.find((e) => e.event === "push")?.status).toBe(503);
    expect(events.find((e) => e.event === "anonymous push")?.status).toBe(401);
  });

  it.each([
    ["datastore", "DatastoreLock", "@google-cloud/datastore"],
    ["firestore", "FirestoreLock", "@google-cloud/firestore"],
    ["spanner", "SpannerLock", "@google-cloud/spanner"],
  ])(
    "over a %s lock without its driver: an ERROR line at start-up, a nack, a clear rejection",
    async (scenario, lock, pkg) => {
      const text = `${lock} needs ${pkg}, which is not installed: npm install ${pkg}`;
      const events = await run(missing, file, scenario);
      expect(atStartup(events)).toEqual([
        `idempotentMessage(): ${text}; until then every message fails and is redelivered`,
      ]);
      expect(events.find((e) => e.event === "message")?.settlements).toEqual(["nack"]);
      expect(events.find((e) => e.event === "claim")).toMatchObject({
        outcome: "rejected",
        name: "InvalidConfiguration",
        message: text,
      });
    },
  );
});

describe("a driver that is installed but broken", () => {
  // @google-cloud/datastore is there, but a module it requires is not: that is the error shown.
  let broken: string;
  beforeAll(async () => {
    broken = mkdtempSync(join(tmpdir(), "broken-peer-"));
    const pkg = join(broken, "node_modules/@google-cloud/datastore");
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      join(pkg, "package.json"),
      JSON.stringify({ name: "@google-cloud/datastore", version: "10.0.0", main: "index.js" }),
    );
    writeFileSync(join(pkg, "index.js"), 'require("google-gax-absent");\n');
    await bundle(broken);
  }, 60_000);
  afterAll(() => rmSync(broken, { recursive: true, force: true }));

  it.each(["app.mjs", "app.cjs"])("%s: the real error, not an install hint", async (file) => {
    const events = await run(broken, file, "datastore");
    const [line, ...more] = atStartup(events);
    expect(more).toEqual([]);
    expect(line).toMatch(
      /^idempotentMessage\(\): DatastoreLock could not load @google-cloud\/datastore: Error: Cannot find module 'google-gax-absent'/,
    );
    expect(line).not.toMatch(/npm install/);
    expect(events.find((e) => e.event === "message")?.settlements).toEqual(["nack"]);
    expect(events.find((e) => e.event === "claim")?.message).toMatch(
      /^DatastoreLock could not load @google-cloud\/datastore: Error: Cannot find module 'google-gax-absent'/,
    );
  });
});

describe("a bundled application whose drivers are installed", () => {
  it("reports nothing at start-up", async () => {
    const events = await run(present, "app.mjs", "present");
    expect(events.filter((e) => e.severity === "ERROR")).toEqual([]);
    expect(events.some((e) => e.event === "built")).toBe(true);
  });
});
