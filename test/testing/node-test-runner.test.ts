/**
 * The contract suite is runner-agnostic: run it under node:test (no vitest in that process)
 * against InMemoryLock, and against a backend that breaks the contract, which must fail.
 */
import { execFile } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const fixture = "test/testing/fixtures/contract-under-node-test.ts";
/** Cases per target: keep in step with src/testing/contract.ts. */
const CASES_PER_TARGET = 36;

interface Summary {
  code: number;
  tests: number;
  pass: number;
  fail: number;
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
        done({ code, tests: count("tests"), pass: count("pass"), fail: count("fail"), output });
      },
    );
  });
}

describe("the contract suite under node:test", () => {
  it("passes against InMemoryLock: fake clock and real clock, every case", async () => {
    const run = await runUnderNodeTest();
    expect({ code: run.code, fail: run.fail }, run.output).toEqual({ code: 0, fail: 0 });
    expect(run.tests).toBe(2 * CASES_PER_TARGET);
    expect(run.pass).toBe(run.tests);
  }, 60_000);

  it("fails against a backend whose stale completes commit", async () => {
    const run = await runUnderNodeTest({ CONTRACT_BROKEN: "1" });
    expect(run.code, run.output).not.toBe(0);
    expect(run.tests).toBe(CASES_PER_TARGET);
    expect(run.fail).toBeGreaterThan(0);
    expect(run.output).toContain("a zombie cannot complete over a newer claim");
  }, 60_000);
});
