#!/usr/bin/env node
// `npm run verify:model`: model-check the record protocol (model/idempotency.pml) with SPIN.
//
// The real model, as lock and as mutex, must show no error in any run; each mutant must yield a
// counterexample, and it must be the expected one (the property the mutant exists to break).
// A ttl too short for a holder's life (sizing rule 2) leaves the fence sound, and breaks only
// (i) of lock; the fence that restarts at 1 (before issue 19) breaks the fence invariant there.
// Every run prints its state-space size.
// Runs one after another (the machine is shared): two to three minutes on a busy machine.
//
// Work files and trails go to .tmp/model/<run>/ (ignored by git); each counterexample comes
// with the command that replays it. Needs `spin` (Debian: apt-get install spin) and a C
// compiler. Exit code: 0 when every run gave the expected answer, 1 otherwise, 2 when a tool
// is missing.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const modelFile = join(root, "model", "idempotency.pml");
const workRoot = join(root, ".tmp", "model");
const modelName = "idempotency.pml";

// The real model's scope. Lease and ttl are 2 ticks and a request lives 4: lease + ttl is
// exactly a holder's life, the tightest setting the sizing rule allows.
const SCOPE = ["-DHOLDERS=3", "-DDELIVERIES=7", "-DLEASE=2", "-DTTL=2", "-DLIFE=4"];
// A ttl shorter than the lease, the other shape of the same rule (fewer deliveries).
const SHORT_TTL_SCOPE = ["-DHOLDERS=3", "-DDELIVERIES=5", "-DLEASE=3", "-DTTL=1", "-DLIFE=4"];
// Liveness needs cycles and fairness, so a smaller clock: every deadline is 1 or 2 ticks.
const LIVE_SCOPE = ["-DHOLDERS=3", "-DLEASE=1", "-DTTL=1", "-DLIFE=2", "-DLIVENESS"];
// A request that outlives lease + ttl by one tick: the sizing rule broken.
const BROKEN_SIZING = ["-DHOLDERS=3", "-DDELIVERIES=4", "-DLEASE=2", "-DTTL=2", "-DLIFE=5"];
const MUTEX = "-DVERB_MUTEX";

/**
 * Every run. `expect` is "pass", or the properties of which one must be the first violated
 * (a tag in the comment of the failing assertion's line, or "(v)" for an acceptance cycle).
 */
const RUNS = [
  { name: "lock", defines: SCOPE, expect: "pass" },
  { name: "mutex", defines: [...SCOPE, MUTEX], expect: "pass" },
  { name: "lock-ttl-below-lease", defines: SHORT_TTL_SCOPE, expect: "pass" },
  { name: "mutex-ttl-below-lease", defines: [...SHORT_TTL_SCOPE, MUTEX], expect: "pass" },
  { name: "lock-liveness", defines: [...LIVE_SCOPE, "-DFAULTS=2"], expect: "pass" },
  { name: "mutex-liveness", defines: [...LIVE_SCOPE, "-DFAULTS=2", MUTEX], expect: "pass" },
  // Sizing rule 2, lease + ttl shorter than a holder's life. The fence never restarts, so
  // the fence and every property but lock's (i) hold: a success that reaches the store after
  // lease + ttl is refused even though nobody took over, and a later copy runs the work again.
  { name: "lock-life-beyond-lease-ttl", defines: BROKEN_SIZING, expect: ["(i)"] },
  {
    name: "lock-life-beyond-lease-ttl-but-i",
    defines: [...BROKEN_SIZING, "-DEXCEPT_I"],
    expect: "pass",
  },
  { name: "mutex-life-beyond-lease-ttl", defines: [...BROKEN_SIZING, MUTEX], expect: "pass" },
  // The fence before issue 19, restarting at 1 on a new record: the short ttl resets it.
  {
    name: "fence-restarts-lock",
    defines: [...BROKEN_SIZING, "-DFENCE_ONLY", "-DFENCE_RESTARTS"],
    expect: ["fence invariant"],
  },
  {
    name: "fence-restarts-mutex",
    defines: [...BROKEN_SIZING, "-DFENCE_ONLY", "-DFENCE_RESTARTS", MUTEX],
    expect: ["fence invariant"],
  },
  // The mutants of issue 19; complete exists in lock only.
  {
    name: "mutant-no-fence-on-complete",
    defines: [...SCOPE, "-DMUTANT_NO_FENCE_ON_COMPLETE"],
    expect: ["(ii)"],
  },
  {
    name: "mutant-lease-guard-on-complete",
    defines: [...SCOPE, "-DMUTANT_LEASE_GUARD_ON_COMPLETE"],
    expect: ["(i)"],
  },
  {
    name: "mutant-release-deletes-lock",
    defines: [...SCOPE, "-DMUTANT_RELEASE_DELETES"],
    expect: ["fence invariant", "(ii)"],
  },
  {
    name: "mutant-release-deletes-mutex",
    defines: [...SCOPE, "-DMUTANT_RELEASE_DELETES", MUTEX],
    expect: ["fence invariant", "(ii)", "(iv)"],
  },
  {
    name: "mutant-release-keeps-fence-lock",
    defines: [...SCOPE, "-DMUTANT_RELEASE_KEEPS_FENCE"],
    expect: ["fence invariant", "(ii)"],
  },
  {
    name: "mutant-release-keeps-fence-mutex",
    defines: [...SCOPE, "-DMUTANT_RELEASE_KEEPS_FENCE", MUTEX],
    expect: ["fence invariant", "(ii)"],
  },
  // Gateway mutants: each shows that one more property can fail.
  { name: "mutant-ack-on-held", defines: [...SCOPE, "-DMUTANT_ACK_ON_HELD"], expect: ["(iii)"] },
  {
    name: "mutant-no-reclaim-lock",
    defines: [...LIVE_SCOPE, "-DFAULTS=1", "-DMUTANT_NO_RECLAIM"],
    expect: ["(v)"],
  },
  {
    name: "mutant-no-reclaim-mutex",
    defines: [...LIVE_SCOPE, "-DFAULTS=1", "-DMUTANT_NO_RECLAIM", MUTEX],
    expect: ["(v)"],
  },
  // Witnesses: the real model reaches each hard case (a model that never gets there proves
  // nothing about it). Each run stops at the first time its scenario happens.
  ...[
    "a crashed holder's claim is reclaimed",
    "a reclaim while the old body still runs",
    "a zombie's complete is fenced out",
    "a complete after the lease lapsed commits",
    "the overtaken holder's release is refused",
    "a heartbeat renew lands after its body ended",
    "a DONE past its ttl is claimed again",
    "a record is deleted while a delivery waits to claim",
  ].map((scenario, index) => ({
    name: `reach-${index + 1}`,
    scenario,
    defines: [...SCOPE, `-DWITNESS=${index + 1}`],
    expect: [`witness ${index + 1}`],
  })),
  // A holder outlives its record and calls on the key's next record: reachable only with a ttl
  // too short for a holder's life, where the fence-restarts runs show what it did before.
  {
    name: "reach-9",
    scenario: "a holder's call meets the record created after its own was deleted",
    defines: [...BROKEN_SIZING, "-DEXCEPT_I", "-DWITNESS=9"],
    expect: ["witness 9"],
  },
];

const MEMORY_LIMIT_MB = 1024;
const HASH_BITS = 22;
const MAX_DEPTH = 100_000;

function need(tool, args) {
  const probe = spawnSync(tool, args, { encoding: "utf8" });
  if (probe.error) {
    console.error(
      `verify:model: ${tool} not found` +
        (tool === "spin" ? " (Debian: apt-get install -y spin)" : " (a C compiler builds pan)"),
    );
    process.exit(2);
  }
  return `${probe.stdout}${probe.stderr}`.trim().split("\n")[0];
}

function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", maxBuffer: 64 << 20 });
  if (result.error) throw result.error;
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

function number(text, pattern) {
  const match = text.match(pattern);
  return match ? Number(match[1]) : undefined;
}

/** The property tag on the model line of the first failing assertion of a replayed trail. */
function violatedProperty(replay, modelLines) {
  const line = number(replay, /idempotency\.pml:(\d+), Error: assertion violated/);
  if (line === undefined) return undefined;
  const text = modelLines[line - 1] ?? "";
  const tag = text.match(/\/\*\s*(fence invariant|witness \d+|\((?:i|ii|iii|iv)\))/);
  return tag ? tag[1] : `line ${line}`;
}

function verify(spec, modelLines) {
  const dir = join(workRoot, spec.name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  copyFileSync(modelFile, join(dir, modelName));
  const liveness = spec.defines.includes("-DLIVENESS");
  const expectsPass = spec.expect === "pass";
  const started = process.hrtime.bigint();

  const generate = run("spin", ["-a", ...spec.defines, modelName], dir);
  if (generate.code !== 0) return { ...spec, problem: `spin -a failed:\n${generate.output}` };
  // A run that must fail stops at its first error; breadth-first search makes that the
  // shortest counterexample, the easiest to read. Liveness needs the depth-first search.
  const breadthFirst = !expectsPass && !liveness;
  const compile = run(
    "cc",
    [
      expectsPass ? "-O2" : "-O0",
      "-w",
      `-DMEMLIM=${MEMORY_LIMIT_MB}`,
      ...(liveness ? [] : ["-DSAFETY"]),
      ...(breadthFirst ? ["-DBFS"] : []),
      "-o",
      "pan",
      "pan.c",
    ],
    dir,
  );
  if (compile.code !== 0) return { ...spec, problem: `cc failed:\n${compile.output}` };
  const panArgs = [`-m${MAX_DEPTH}`, `-w${HASH_BITS}`, ...(liveness ? ["-a", "-f"] : [])];
  const search = run("./pan", panArgs, dir);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const out = search.output;
  const result = {
    ...spec,
    seconds,
    errors: number(out, /errors: (\d+)/),
    stored: number(out, /([\d.e+]+) states, stored/),
    matched: number(out, /([\d.e+]+) states, matched/),
    transitions: number(out, /([\d.e+]+) transitions/),
    depth: number(out, /depth reached (\d+)/),
    panSeconds: number(out, /elapsed time ([\d.e+]+) seconds/),
    replay: `cd ${relative(root, dir)} && spin -t ${spec.defines.join(" ")} ${modelName}`,
  };
  if (result.errors === undefined || result.stored === undefined) {
    return { ...result, problem: `pan gave no verdict:\n${out}` };
  }
  if (result.errors === 0) {
    // No error in a truncated or partial search proves nothing.
    const truncated = ["max search depth too small", "out of memory", "reached -DMEMLIM bound"];
    const warning = truncated.find((text) => out.includes(text));
    return warning ? { ...result, problem: `pan: ${warning}` } : result;
  }

  if (out.includes("acceptance cycle")) return { ...result, property: "(v)" };
  if (!existsSync(join(dir, `${modelName}.trail`))) {
    return { ...result, problem: `an error but no trail:\n${out}` };
  }
  const replay = run("spin", ["-t", ...spec.defines, modelName], dir);
  return { ...result, property: violatedProperty(replay.output, modelLines) };
}

function verdict(result) {
  if (result.problem) return { ok: false, text: result.problem };
  if (result.expect === "pass") {
    return result.errors === 0
      ? { ok: true, text: "no error" }
      : { ok: false, text: `UNEXPECTED counterexample, ${result.property}` };
  }
  if (result.errors === 0) {
    return { ok: false, text: result.scenario ? "never reached" : "NO counterexample" };
  }
  if (!result.expect.includes(result.property)) {
    return { ok: false, text: `counterexample, ${result.property}: expected ${result.expect}` };
  }
  if (result.scenario) return { ok: true, text: `reached: ${result.scenario}` };
  return { ok: true, text: `counterexample, ${result.property}` };
}

const grouped = new Intl.NumberFormat("en-US");

function sizeLine(result) {
  const count = (value) => grouped.format(value ?? 0);
  return (
    `${count(result.stored)} states stored, ${count(result.matched)} matched, ` +
    `${count(result.transitions)} transitions, depth ${result.depth}; ` +
    `search ${result.panSeconds} s (${result.seconds.toFixed(1)} s with spin and cc)`
  );
}

const spinVersion = need("spin", ["-V"]);
need("cc", ["--version"]);
const modelLines = readFileSync(modelFile, "utf8").split("\n");
console.log(`verify:model: ${relative(root, modelFile)} with ${spinVersion}`);
const allStarted = process.hrtime.bigint();
let failures = 0;
for (const spec of RUNS) {
  const result = verify(spec, modelLines);
  const { ok, text } = verdict(result);
  if (!ok) failures += 1;
  console.log(`${ok ? "ok  " : "FAIL"} ${spec.name.padEnd(34)} ${text}`);
  if (result.stored !== undefined) console.log(`       ${sizeLine(result)}`);
  if (result.errors > 0 && !result.problem && !result.scenario) {
    console.log(`       trail: ${result.replay}`);
  }
}
const total = Number(process.hrtime.bigint() - allStarted) / 1e9;
console.log(
  `verify:model: ${RUNS.length - failures} of ${RUNS.length} runs as expected in ${total.toFixed(1)} s`,
);
process.exit(failures === 0 ? 0 : 1);
