/**
 * Where a once() duplicate's CPU goes, on InMemoryLock (no I/O), one call after another: a
 * lock() duplicate (Duplicate rejected), once() duplicates whose record holds no value, a tiny
 * one and the bench's 1,000-byte JSON result, JSON.parse of that text alone, and the bare claim.
 * CPU µs per call, median [min–max] of 7 rounds after one untimed. Cited in
 * docs/benchmarks/cited.md; the suite does not run it.
 *
 *   node --import tsx --import ./scripts/text-loader.mjs bench/cited/once-parts.ts
 */
import { Duplicate, InMemoryLock, lock, once } from "gcp-pubsub-idempotency";
import { resultFor } from "../once-results.js";

const backend = new InMemoryLock();
const options = { backend, leaseMs: 3_600_000 };
await lock("lock", options, () => undefined);
await once("undefined", options, () => undefined);
await once("tiny", options, () => ({ a: 1 }));
await once("kib", options, () => resultFor(1));
const text = JSON.stringify(resultFor(1));
let sink = 0;
const figures: Record<string, () => unknown> = {
  "lock() duplicate (rejects Duplicate)": () =>
    lock("lock", options, () => 0).catch((error: unknown) => {
      if (!(error instanceof Duplicate)) throw error;
    }),
  "once() duplicate, undefined recorded": () => once("undefined", options, () => 0),
  "once() duplicate, {a:1} recorded": () => once("tiny", options, () => 0),
  "once() duplicate, the 1,000-byte result recorded": () => once("kib", options, () => 0),
  "JSON.parse of the 1,000-byte result alone": () => {
    sink += (JSON.parse(text) as { items: unknown[] }).items.length;
  },
  "InMemoryLock's claim of a done key, bare": () => backend.claim("lock", 60_000),
};
const calls = 100_000;
const perCall: Record<string, number[]> = Object.fromEntries(
  Object.keys(figures).map((what) => [what, []]),
);
for (let round = 0; round < 8; round++) {
  for (const [what, call] of Object.entries(figures)) {
    const cpu = process.cpuUsage();
    for (let i = 0; i < calls; i++) await call();
    const used = process.cpuUsage(cpu);
    if (round > 0) perCall[what]!.push((used.user + used.system) / calls);
  }
}
for (const [what, values] of Object.entries(perCall)) {
  values.sort((a, b) => a - b);
  const at = (k: number) => values[k]!.toFixed(2);
  console.log(`${what}: ${at(3)} µs [${at(0)}–${at(values.length - 1)}]`);
}
if (sink === 0) throw new Error("unreachable: the parse was not used");
