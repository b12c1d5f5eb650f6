/**
 * The contract suite is runner-agnostic: run it under node:test (no vitest in that process)
 * against InMemoryLock, against a backend that breaks the contract, which must fail, and
 * against one that lacks the optional methods, whose cases node:test must report skipped.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const fixture = "test/testing/fixtures/contract-under-node-test.ts";
/** Cases per target: keep in step with src/testing/contract.ts. */
const CASES_PER_TARGET = 47;

interface Summary {
  code: number;
  tests: number;
  pass: number;
  fail: number;
  skipped: number;
  output: string;
}

function runUnderNodeTest(env: Record<string, string> = {}): Promise<Summary> {
  return new Promise((done, failed) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "--test", "--test-reporter=tap", fixture],
      { cwd: root, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        const count = (name: string) => {
          const match = new RegExp(`^# ${name} (\\d+)$`, "m").exec(stdout);
          if (!match) failed(new Error(`no "# ${name}" line in the TAP output:\n${output}`));
          return Number(match?.[1]);
        };
        const code = error ? Number((error as { code?: unknown }).code ?? 1) : 0;
        done({
          code,
          tests: count("tests"),
          pass: count("pass"),
          fail: count("fail"),
          skipped: count("skipped"),
          output,
        });
      },
    );
  });
}

describe("the contract suite under node:test", () => {
  it("passes against InMemoryLock: fake clock and real clock, every case; cleanup runs in after", async () => {
    const dir = mkdtempSync(join(tmpdir(), "contract-cleanup-"));
    try {
      const file = join(dir, "cleanup.txt");
      const run = await runUnderNodeTest({ CONTRACT_CLEANUP_FILE: file });
      expect({ code: run.code, fail: run.fail }, run.output).toEqual({ code: 0, fail: 0 });
      expect(run.tests).toBe(2 * CASES_PER_TARGET);
      expect(run.pass).toBe(run.tests);
      expect(run.skipped).toBe(0);
      // Every case's create and the warm-up's came before it.
      const creates = Number(/^cleanup after (\d+) creates$/.exec(readFileSync(file, "utf8"))?.[1]);
      expect(creates).toBeGreaterThan(CASES_PER_TARGET);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("fails against a backend whose stale completes commit", async () => {
    const run = await runUnderNodeTest({ CONTRACT_BROKEN: "1" });
    expect(run.code, run.output).not.toBe(0);
    expect(run.tests).toBe(CASES_PER_TARGET);
    expect(run.fail).toBeGreaterThan(0);
    expect(run.output).toContain("a zombie cannot complete over a newer claim");
  }, 60_000);

  it("skips the cases of the methods a backend lacks, naming them, and fails a do-nothing purge", async () => {
    const run = await runUnderNodeTest({ CONTRACT_INCOMPLETE: "1" });
    expect(run.code, run.output).not.toBe(0);
    expect(run.tests).toBe(CASES_PER_TARGET);
    // renew: 2 cases, inspect: 3, forceRelease: 3; results: 6, fingerprints: 4 (no
    // backend.supports); the rest run.
    expect({ skipped: run.skipped, fail: run.fail, pass: run.pass }, run.output).toEqual({
      skipped: 18,
      fail: 1,
      pass: CASES_PER_TARGET - 19,
    });
    const skips = run.output.match(/^\s*ok \d+ - .+ # SKIP .+$/gm) ?? [];
    const reasons = skips.map((line) => line.replace(/^.* # SKIP /, ""));
    expect(reasons.sort()).toEqual(
      [
        ...Array(3).fill("the backend has no forceRelease(): this case needs it"),
        ...Array(3).fill("the backend has no inspect(): this case needs it"),
        ...Array(2).fill("the backend has no renew(): this case needs it"),
        ...Array(4).fill(
          "backend.supports.fingerprints is not true: the backend keeps no fingerprints",
        ),
        ...Array(6).fill("backend.supports.results is not true: the backend keeps no results"),
      ].sort(),
    );
    expect(run.output).toMatch(/^\s*not ok \d+ - purgeExpired deletes the expired records/m);
  }, 60_000);
});
