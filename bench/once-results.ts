/**
 * The results the once() cell records and replays, and the decode of them alone:
 *
 *   large — about 1 KiB of JSON (an order with eight items and a note padded to size)
 *   small — about 100 bytes (an order id, a charge id, a status, an amount): the typical case
 *
 * Each done key `i` gets its own order id, so a replay of another key's record is caught.
 * `decodeBench` times the default codec's decode of the recorded texts, in this process, the
 * two sizes taking turns round by round, so the once section can show how much of the gap to
 * lock() is the decode.
 */
import { DEFAULT_MAX_RESULT_BYTES } from "gcp-pubsub-idempotency";
// The default codec itself (not exported by the package): the decode a once() duplicate runs.
import { JSON_CODEC, recordResult } from "../src/core/verbs/result.js";
import type { Settings } from "./runner.js";

/** The result a once() body returned for done key `i`: about 1,000 bytes of JSON. */
export interface OrderResult {
  orderId: string;
  chargeId: string;
  status: string;
  items: Array<{ sku: string; quantity: number; priceCents: number }>;
  note: string;
}

/** The small result: what a handler's caller typically needs back. */
export interface ChargeResult {
  orderId: string;
  chargeId: string;
  status: string;
  amountCents: number;
}

/** Bytes of JSON each large result is padded to (the "r:" marker adds 2): within 1 KiB. */
export const RESULT_JSON_BYTES = 1_000;
/** Bytes of JSON of each small result, by construction (fixed-width fields). */
export const SMALL_RESULT_JSON_BYTES = 100;
/** The marker once() records before the codec's text ("r:"). */
export const MARKER_BYTES = 2;

const id6 = (i: number) => String(i).padStart(6, "0");
/** The order id of done key `i`, the same in both results: what the sanity checks compare. */
export const orderIdFor = (i: number) => `order-${id6(i)}`;

/** Done key `i`'s large result. */
export function resultFor(i: number): OrderResult {
  const base: OrderResult = {
    orderId: orderIdFor(i),
    chargeId: `ch_${id6(i)}_3NqkP9Lm2xQwZr8T`,
    status: "charged",
    items: Array.from({ length: 8 }, (_, k) => ({
      sku: `SKU-${1000 + k}`,
      quantity: 1 + (k % 3),
      priceCents: 1999 + 100 * k,
    })),
    note: "",
  };
  // ASCII only: one byte per character, so the length is the byte count.
  const pad = RESULT_JSON_BYTES - JSON.stringify(base).length;
  if (pad < 0) throw new Error("bench: the once() result is over its size");
  return { ...base, note: "n".repeat(pad) };
}

/** Done key `i`'s small result (below a million keys every field has a fixed width). */
export function smallResultFor(i: number): ChargeResult {
  return {
    orderId: orderIdFor(i),
    chargeId: `ch_3NqkP9Lm2xQw${id6(i)}`,
    status: "charged",
    amountCents: 17_992,
  };
}

/** The JSON once() records for a result, marker removed: what the codec's decode is given. */
export function recordedJson(value: unknown): string {
  const { text } = recordResult(value, JSON_CODEC, DEFAULT_MAX_RESULT_BYTES);
  if (!text.startsWith("r:")) throw new Error(`bench: the result was not recorded (${text})`);
  return text.slice(MARKER_BYTES);
}

/** One size's decode, per round: CPU and wall µs per call, and the calls timed. */
export interface DecodeTiming {
  cpuUs: number[];
  wallUs: number[];
  calls: number[];
}

export interface DecodeRun {
  /** Timed ms per size per round (after a warm-up of `settings.warmupMs`). */
  roundMs: number;
  rounds: number;
  large: DecodeTiming;
  small: DecodeTiming;
}

/**
 * The default codec's decode of each size's recorded texts (one per done key, cycled), timed
 * in batches until `ms` have passed. Every decoded order id is compared, so the work cannot
 * be dropped and a wrong text stops the run; the comparison is in both sizes' loops alike.
 */
function timeDecode(texts: readonly string[], ids: readonly string[], ms: number) {
  const deadline = process.hrtime.bigint() + BigInt(Math.round(ms * 1e6));
  const cpu0 = process.cpuUsage();
  const wall0 = process.hrtime.bigint();
  let calls = 0;
  let k = 0;
  for (;;) {
    for (let n = 0; n < 64; n++, calls++) {
      const value = JSON_CODEC.decode(texts[k]!) as { orderId: string };
      if (value.orderId !== ids[k]) throw new Error("bench: a decoded result is another key's");
      k = k + 1 === texts.length ? 0 : k + 1;
    }
    if (process.hrtime.bigint() >= deadline) break;
  }
  const wallUs = Number(process.hrtime.bigint() - wall0) / 1e3;
  const cpu = process.cpuUsage(cpu0);
  return { cpuUs: (cpu.user + cpu.system) / calls, wallUs: wallUs / calls, calls };
}

/**
 * Both sizes' decode, `settings.rounds` rounds, the order reversed every other round as the
 * cells' contenders are; each timed for half a round of the cells (the figure holds still well
 * before that, and the run stays short).
 */
export function decodeBench(settings: Settings): DecodeRun {
  const keys = Array.from({ length: settings.dupKeys }, (_, i) => i);
  const ids = keys.map(orderIdFor);
  const sizes = {
    large: keys.map((i) => recordedJson(resultFor(i))),
    small: keys.map((i) => recordedJson(smallResultFor(i))),
  };
  const roundMs = Math.max(10, Math.round(settings.roundMs / 2));
  const run: DecodeRun = {
    roundMs,
    rounds: settings.rounds,
    large: { cpuUs: [], wallUs: [], calls: [] },
    small: { cpuUs: [], wallUs: [], calls: [] },
  };
  const order = ["large", "small"] as const;
  for (let round = 0; round < settings.rounds; round++) {
    for (const size of round % 2 === 0 ? order : [...order].reverse()) {
      timeDecode(sizes[size], ids, settings.warmupMs);
      const t = timeDecode(sizes[size], ids, roundMs);
      run[size].cpuUs.push(t.cpuUs);
      run[size].wallUs.push(t.wallUs);
      run[size].calls.push(t.calls);
    }
  }
  return run;
}
