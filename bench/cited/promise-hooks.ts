/**
 * What an enabled AsyncLocalStorage costs code that never enters it: a build's gateway calls
 * (bench/gateway-calls.ts) timed with a storage of this script's own disabled and enabled (one
 * `run()` turns it on; `disable()` off), taking turns, in one process. On Node 20 and 22 an
 * enabled storage keeps promise hooks on for every promise of the process; on Node 24 the
 * storage rides AsyncContextFrame and costs nothing until entered. Prints enabled ÷ disabled
 * per CPU-second, median [min–max] of 9 rounds. The default ref, 067db39, is the last commit
 * before the step scope (b0428e1): its build enters no storage itself. Cited in
 * docs/benchmarks/cited.md; the suite does not run it.
 *
 *   node --expose-gc --import tsx --import ./scripts/text-loader.mjs bench/cited/promise-hooks.ts [ref]
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { InstantBackend, lockCalls, pushCalls, surfaceCalls } from "../gateway-calls.js";
import { buildAt } from "../published-build.js";

const build = await buildAt(process.argv[2] ?? "067db39");
const backend = new InstantBackend();
const lock = lockCalls(build, backend);
const push = pushCalls(build, backend, 10);
const done = await surfaceCalls(build, "done");
const figures: Record<string, () => Promise<unknown>> = {
  "floor (claim + complete, bare)": lock.floor,
  "lock(): claim → body → complete": lock.lock,
  "idempotentHttp push": push.push,
  "duplicate through idempotentHttp": done.calls.http,
  "duplicate through idempotentMessage": done.calls.message,
};
const collectGarbage = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
async function perCpuSecond(call: () => Promise<unknown>, n: number): Promise<number> {
  collectGarbage();
  await new Promise((resume) => setTimeout(resume, 10));
  const cpu = process.cpuUsage();
  for (let i = 0; i < n; i++) await call();
  const used = process.cpuUsage(cpu);
  return n / ((used.user + used.system) / 1e6);
}
const storage = new AsyncLocalStorage<number>();
const calls = 50_000;
for (const call of Object.values(figures)) await perCpuSecond(call, calls);
const ratios: Record<string, number[]> = Object.fromEntries(
  Object.keys(figures).map((what) => [what, []]),
);
for (let round = 0; round < 9; round++) {
  for (const [what, call] of Object.entries(figures)) {
    const rate: Record<string, number> = {};
    for (const state of round % 2 === 0 ? ["disabled", "enabled"] : ["enabled", "disabled"]) {
      if (state === "enabled") storage.run(1, () => undefined);
      else storage.disable();
      rate[state] = await perCpuSecond(call, calls);
    }
    ratios[what]!.push(rate.enabled! / rate.disabled!);
  }
}
storage.disable();
console.log(`Node ${process.version}; ${build.commit.slice(0, 7)}'s build`);
for (const [what, values] of Object.entries(ratios)) {
  values.sort((a, b) => a - b);
  console.log(
    `${what}: enabled ÷ disabled ${values[4]!.toFixed(2)}× [${values[0]!.toFixed(2)}–${values.at(-1)!.toFixed(2)}]`,
  );
}
