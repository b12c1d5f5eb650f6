// The CLI as users run it: src/cli/bin.ts bundled once per test file (as the package build
// does, drivers left to node_modules), then run as a child process.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { CliIo } from "../../src/cli/output.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface BuiltCli {
  /** Run the bin with `args`; `env` is added to this process's environment. */
  run(
    args: readonly string[],
    options?: { env?: Record<string, string>; input?: string },
  ): Promise<CliRun>;
  remove(): void;
}

/** Bundle the bin into .tmp/ (inside the repository, so its drivers resolve from node_modules). */
export async function buildCli(): Promise<BuiltCli> {
  mkdirSync(join(root, ".tmp"), { recursive: true });
  const dir = mkdtempSync(join(root, ".tmp", "cli-test-"));
  const outfile = join(dir, "bin.mjs");
  await build({
    entryPoints: [join(root, "src/cli/bin.ts")],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    loader: { ".lua": "text", ".sql": "text" },
    logLevel: "error",
  });
  return {
    run(args, options = {}) {
      return new Promise((done, fail) => {
        const child = spawn(process.execPath, [outfile, ...args], {
          env: { ...process.env, ...options.env },
          stdio: ["pipe", "pipe", "pipe"],
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
        child.on("close", (code) => done({ code, stdout, stderr }));
        child.stdin.end(options.input ?? "");
      });
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A terminal for `runCli` in process: keeps what was written and asked; stdin types `answers`. */
export function fakeTerminal(env: Record<string, string> = {}, answers: string[] = []) {
  const io = { out: "", err: "", asked: [] as string[] };
  const cli: CliIo = {
    env,
    out: (text) => {
      io.out += text;
    },
    err: (text) => {
      io.err += text;
    },
    errIsTerminal: answers.length > 0,
    // No answers to type: stdin is no terminal, so nothing may be asked.
    inIsTerminal: answers.length > 0,
    ask: async (question) => {
      io.asked.push(question);
      return answers.shift();
    },
  };
  return { io, cli };
}
