/**
 * The contract suite never passes a case it did not run: under vitest, on InMemoryLock and on
 * incomplete versions of it (test/testing/fixtures/incomplete-backend.ts: no renew, inspect or
 * forceRelease; a purgeExpired that deletes nothing, or the real one), run in a vitest of its
 * own with a reporter that prints each case's state and skip note. The same under node:test
 * is in node-test-runner.test.ts.
 */
import { execFile } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { CASE_STATES_MARKER, type CaseState } from "./fixtures/case-states-reporter.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** Cases per target: keep in step with src/testing/contract.ts. */
const CASES_PER_TARGET = 47;
const PURGE_CASE = /^purgeExpired deletes the expired records/;
const LEASE_END_CASE = /^absent → won with a lease ending leaseMs after the claim/;
/** The cases that need an optional method, and the method each names when skipped. */
const OPTIONAL_CASES: Record<string, "renew" | "inspect" | "forceRelease"> = {
  "fence matches → true, and the lease moves forward": "renew",
  "stale fence or done record → false": "renew",
  "inspect: an absent key → undefined": "inspect",
  "inspect: a held key → claimed, its fence and lease, in the store's clock": "inspect",
  "inspect: a done key → done, expiring after now": "inspect",
  "forceRelease at the held fence → released; the next claim wins at fence + 2 and the old holder is fenced out":
    "forceRelease",
  "forceRelease with another fence → changed, the claim untouched": "forceRelease",
  "forceRelease never touches a done record, nor an absent one": "forceRelease",
};

let run: { code: number; cases: CaseState[]; output: string };

beforeAll(async () => {
  const result = await promisify(execFile)(
    process.execPath,
    [
      join(root, "node_modules/vitest/vitest.mjs"),
      "run",
      "--config",
      "test/testing/fixtures/vitest.contract-skip.config.ts",
    ],
    { cwd: root, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
  ).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout: string; stderr: string }) => ({ ...error, code: error.code }),
  );
  const output = `${result.stdout}${result.stderr}`;
  const line = result.stdout.split("\n").find((l) => l.startsWith(CASE_STATES_MARKER));
  if (line === undefined) throw new Error(`no case states in the fixture's output:\n${output}`);
  run = {
    code: Number(result.code ?? 1),
    cases: JSON.parse(line.slice(CASE_STATES_MARKER.length)) as CaseState[],
    output,
  };
}, 90_000);

/** The cases of one target, by title. */
function casesOf(target: string): Map<string, CaseState> {
  const cases = run.cases.filter((c) => c.suite === `LockBackend contract: ${target}`);
  const byTitle = new Map(cases.map((c) => [c.title, c]));
  expect(byTitle.size, `titles of ${target}`).toBe(cases.length);
  expect(cases, run.output).toHaveLength(CASES_PER_TARGET);
  return byTitle;
}

const find = (cases: Map<string, CaseState>, title: RegExp) => {
  const found = [...cases.values()].find((c) => title.test(c.title));
  if (!found) throw new Error(`no case matching ${title}`);
  return found;
};

/** The cases of what a record keeps, skipped on a backend without `supports`, naming it. */
const RECORD_CASES = 10;
function recordCasesSkipped(cases: Map<string, CaseState>): string[] {
  const skipped = [...cases.values()].filter((c) => c.note?.startsWith("backend.supports."));
  expect(skipped).toHaveLength(RECORD_CASES);
  for (const c of skipped) expect(c.state).toBe("skipped");
  return skipped.map((c) => c.title);
}

/** Every case not listed in `except`, nor a record case skipped for want of support, passed. */
function othersPassed(cases: Map<string, CaseState>, listed: string[]) {
  const except = [...listed, ...recordCasesSkipped(cases)];
  const others = [...cases.values()].filter((c) => !except.includes(c.title));
  expect(others.filter((c) => c.state !== "passed")).toEqual([]);
}

function optionalCasesSkipped(cases: Map<string, CaseState>) {
  for (const [title, method] of Object.entries(OPTIONAL_CASES)) {
    expect(cases.get(title), title).toMatchObject({
      state: "skipped",
      note: `the backend has no ${method}(): this case needs it`,
    });
  }
}

describe("the contract suite under vitest reports what it did not run as skipped", () => {
  it("InMemoryLock: every case runs and passes, none skipped", () => {
    const cases = casesOf("complete (fake clock)");
    expect([...cases.values()].filter((c) => c.state !== "passed")).toEqual([]);
    expect(find(cases, PURGE_CASE).state).toBe("passed");
    expect(find(cases, LEASE_END_CASE).state).toBe("passed");
  });

  it("no renew, inspect or forceRelease: their 8 cases are skipped, naming the method; a do-nothing purge fails", () => {
    const cases = casesOf("incomplete, do-nothing purge (fake clock, now)");
    optionalCasesSkipped(cases);
    const purge = find(cases, PURGE_CASE);
    expect(purge.state).toBe("failed");
    expect(purge.error).toContain("expected 0 >= 3");
    // The target's now() is the clock of the lease-end case, which runs.
    expect(find(cases, LEASE_END_CASE).state).toBe("passed");
    othersPassed(cases, [...Object.keys(OPTIONAL_CASES), purge.title]);
    expect(run.code, "the fixture run fails").toBe(1);
  });

  it("the same backend with a real purge passes the purge case on its count alone (no inspect)", () => {
    for (const target of [
      "incomplete, real purge (fake clock, no now)",
      "incomplete, real purge (real clock)",
    ]) {
      const cases = casesOf(target);
      optionalCasesSkipped(cases);
      expect(find(cases, PURGE_CASE).state, target).toBe("passed");
    }
  });

  it("the lease-end case: skipped with a fake clock and neither now() nor inspect(), run against Date.now() on a real clock", () => {
    const fake = casesOf("incomplete, real purge (fake clock, no now)");
    const leaseEnd = find(fake, LEASE_END_CASE);
    expect(leaseEnd.state).toBe("skipped");
    expect(leaseEnd.note).toContain("no now()");
    expect(leaseEnd.note).toContain("no inspect()");
    othersPassed(fake, [...Object.keys(OPTIONAL_CASES), leaseEnd.title]);

    const real = casesOf("incomplete, real purge (real clock)");
    expect(find(real, LEASE_END_CASE).state).toBe("passed");
    othersPassed(real, Object.keys(OPTIONAL_CASES));
  });
});
