/**
 * `gcp-pubsub-idempotency/testing` loads where vitest cannot be resolved: build the package's
 * entries as tsup does (ESM, no types) into a project in the temp directory that has no
 * vitest, and run the push simulator there from a plain Node script.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "tsup";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
let project: string | undefined;

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

const script = `
import assert from "node:assert/strict";
import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
import { fakeMessage, simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";

assert.throws(() => import.meta.resolve("vitest"));
const runs = [];
const handler = idempotentHttp({ backend: new InMemoryLock(), logger: { info() {}, warn() {}, error() {} } },
  async (message) => void runs.push(message.json().po));
const report = await simulatePushDeliveries({ handler, messages: [{ po: "1" }, { po: "2" }], copies: 3 });
console.log(JSON.stringify({ runs: runs.sort(), deliveries: report.deliveries, unacked: report.unacked,
  fake: typeof fakeMessage("hi").ack }));
`;

describe("gcp-pubsub-idempotency/testing without vitest", () => {
  it("loads in a plain Node project and runs the push simulator", async () => {
    project = await mkdtemp(join(tmpdir(), "gpi-no-vitest-"));
    const pkg = join(project, "node_modules", "gcp-pubsub-idempotency");
    await build({
      config: false,
      entry: {
        index: join(root, "src/index.ts"),
        "testing/index": join(root, "src/testing/index.ts"),
      },
      outDir: join(pkg, "dist"),
      format: ["esm"],
      platform: "node",
      target: "node20",
      splitting: true,
      dts: false,
      silent: true,
      loader: { ".lua": "text", ".sql": "text" },
      external: ["vitest"],
    });
    const manifest = JSON.parse(await readFile(join(root, "package.json"), "utf8"));
    const exports = { ".": "./dist/index.js", "./testing": "./dist/testing/index.js" };
    await writeFile(
      join(pkg, "package.json"),
      JSON.stringify({ name: manifest.name, version: manifest.version, type: "module", exports }),
    );
    // No chunk of the two entries mentions vitest at all.
    for (const file of await readdir(join(pkg, "dist"), { recursive: true })) {
      if (!String(file).endsWith(".js")) continue;
      expect(await readFile(join(pkg, "dist", String(file)), "utf8"), String(file)).not.toMatch(
        /["']vitest["']/,
      );
    }
    await writeFile(
      join(project, "package.json"),
      JSON.stringify({ name: "fresh", type: "module" }),
    );
    await writeFile(join(project, "main.js"), script);

    const stdout = await new Promise<string>((done, failed) => {
      execFile(process.execPath, ["main.js"], { cwd: project }, (error, out, err) =>
        error ? failed(new Error(`${error.message}\n${out}${err}`)) : done(out),
      );
    });
    expect(JSON.parse(stdout)).toEqual({
      runs: ["1", "2"],
      deliveries: 6,
      unacked: [],
      fake: "function",
    });
  }, 60_000);
});
