// The model-based test of the transition table (issue 19, point 3), on any backend: fast-check
// draws short sequences of claim / complete / release / renew / wait on one or two keys, runs
// them against the backend on its real store and real clock, and checks every answer against
// the pure table of src/core/transitions.ts, which is the model's oracle.
//
// Real clocks: the store judges each call at a moment of its own clock that the test only
// knows to lie in a window — between the client's clock before the call and after its answer,
// shifted by what is known of the store clock's offset from the client's. The model therefore
// keeps, for each key, the records the store could hold (usually one), with their lease end
// and expiry as intervals, and asks the table for its answer at every moment of the window
// that could change it (the window's ends and each boundary inside it). Any of those answers
// is accepted; the answer that came back tells which side of the boundary the store was on,
// and the model continues from the records that answer allows. A won claim's lease end tells
// the store's time exactly, which narrows the clock offset for the rest of the sequence.
//
// Test files only: it imports no test runner, and asserts with node:assert.
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Claim, ClaimOutcome, LockBackend } from "../../src/core/port.js";
import {
  claimTransition,
  completeTransition,
  type LockRecord,
  releaseTransition,
  renewTransition,
  type Transition,
  unlessLapsed,
} from "../../src/core/transitions.js";
import { warmUpBackend } from "../../src/testing/warm-up.js";

/** A backend under the model, with its store's short lease and ttl. */
export interface ModelTarget {
  /** Shown in the report and in counterexamples. */
  name: string;
  /** A backend whose ttl is `ttlMs`; the keys each sequence uses are its own. */
  backend: LockBackend;
  /** The base lease; claims and renews ask for it or for half of it, waits are fractions. */
  leaseMs: number;
  /** The backend's ttl; half the lease is a good choice, so that sequences reach expiries. */
  ttlMs: number;
  /**
   * Where the store's clock is: `"client"` when it reads this process's `Date.now()`
   * (InMemoryLock; an emulator on this machine, for DatastoreLock and FirestoreLock, which
   * judge in the store's time), `"server"` when by a clock of
   * its own (Redis `TIME`, SQL `now()`; its offset is learned from each sequence's first won
   * claim), or an injected clock read by both sides (InMemoryLock with a fake clock; waits
   * advance it): the window is then exactly from the call's start to its answer.
   */
  clock: "client" | "server" | { now(): number; advance(ms: number): void };
  /**
   * DatastoreLock and FirestoreLock answer a claim whose write outlasted its own lease `held`
   * instead of `won` (`unlessLapsed` in the table): the write stands, the win is not handed out.
   */
  lapsedWinAnswersHeld?: boolean;
  /**
   * How far behind the store's time the backend may judge a call and start what it writes:
   * DatastoreLock and FirestoreLock know their store's time as bounds learned from its
   * answers (store-clock.ts), and decide at the earliest, up to a recent answer's round trip
   * behind; a win is refused by the latest, up to as far ahead. Default 0.
   */
  clockLagMs?: number;
  /**
   * Whether the store may delete a record on its own once past its expiry (Redis PEXPIREAT,
   * InMemoryLock's sweep; a claim then starts a new record above every fence the key had).
   * Default true; false for a
   * store that keeps it until purged (SQL without `purgeExpired()`, an emulator without a TTL
   * policy), so that a claim there must find the record and raise its fence.
   */
  deletesExpired?: boolean;
}

/** How much testing, and how to replay a failure. */
export interface ModelRunOptions {
  /** Sequences to run; default 200. */
  numRuns?: number;
  /** Commands per sequence at most; default 10. */
  maxCommands?: number;
  /** Replay: the seed and path a failure printed. */
  seed?: number;
  path?: string;
}

/** What a run saw, for the log line and the issue's report. */
export interface ModelReport {
  name: string;
  sequences: number;
  commands: number;
  /** Calls where one record the store could hold allowed more than one answer in the window. */
  ambiguous: number;
  /**
   * Of those, calls whose answer differed from the table's at the client's best estimate (the
   * window's midpoint): a model without the window would have failed them.
   */
  offEstimate: number;
  /** Calls after which more than one record stayed possible (the answer could not tell). */
  forks: number;
  /** Claims on a record past its expiry, which the store may or may not have deleted yet. */
  maybeDeleted: number;
  /** Of those, claims whose answer showed it deleted (a new record, above the old fence). */
  deleted: number;
  /** How often each row of the table applied (as the answer showed it). */
  rows: Record<string, number>;
  leaseMs: number;
  ttlMs: number;
  elapsedMs: number;
}

// --- commands ----------------------------------------------------------------------------

const KEYS = 2;

/**
 * One step of a sequence; `lease` and `fraction` are in units of the base lease. A fenced
 * call uses a claim won on its key: `age` 0 the latest, 1 the one before (a zombie, or a
 * holder whose lease was taken over), or the latest when there is no older one; a key never
 * won gets a forged claim at fence 1.
 */
export type ModelCommand =
  | { op: "claim"; key: number; lease: 0.5 | 1; payload?: Payload }
  | { op: "complete"; key: number; age: 0 | 1; payload?: Payload }
  | { op: "release"; key: number; age: 0 | 1 }
  | { op: "renew"; key: number; age: 0 | 1; lease: 0.5 | 1 }
  | { op: "wait"; fraction: 0.25 | 0.5 | 1 };

/**
 * On a backend that stores fingerprints and results: a claim's fingerprint and a complete's
 * result, one of two payloads or none (0, 1; 2 = none), so every record field is written,
 * answered, replaced on a win and cleared as the table says.
 */
type Payload = 0 | 1 | 2;
const PAYLOAD = fc.constantFrom<Payload>(2, 0, 1);
const fingerprintOf = (payload: Payload | undefined) =>
  payload === undefined || payload === 2 ? undefined : `fp-${payload}`;
const resultOf = (payload: Payload | undefined) =>
  payload === undefined || payload === 2 ? undefined : `r:${payload}`;

function commandArbitrary(renews: boolean, payloads: boolean): fc.Arbitrary<ModelCommand> {
  const age = fc.oneof({ weight: 3, arbitrary: fc.constant<0 | 1>(0) }, fc.constant<0 | 1>(1));
  // Mostly the first key, so that one key lives through many calls; the second catches calls
  // that touch a record other than their own.
  const key = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, fc.constant(1));
  const lease = fc.constantFrom<0.5 | 1>(1, 0.5);
  const arbitraries: fc.WeightedArbitrary<ModelCommand>[] = [
    {
      weight: 4,
      arbitrary: payloads
        ? fc.record({ op: fc.constant("claim" as const), key, lease, payload: PAYLOAD })
        : fc.record({ op: fc.constant("claim" as const), key, lease }),
    },
    {
      weight: 2,
      arbitrary: payloads
        ? fc.record({ op: fc.constant("complete" as const), key, age, payload: PAYLOAD })
        : fc.record({ op: fc.constant("complete" as const), key, age }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("release" as const), key, age }) },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant("wait" as const),
        fraction: fc.constantFrom<0.25 | 0.5 | 1>(0.5, 0.25, 1),
      }),
    },
  ];
  if (renews) {
    arbitraries.push({
      weight: 2,
      arbitrary: fc.record({ op: fc.constant("renew" as const), key, age, lease }),
    });
  }
  return fc.oneof(...arbitraries);
}

function showCommand(c: ModelCommand): string {
  switch (c.op) {
    case "wait":
      return `wait ${c.fraction} lease`;
    case "claim":
      return `claim k${c.key} for ${c.lease} lease${c.payload === undefined ? "" : ` fingerprint ${fingerprintOf(c.payload) ?? "none"}`}`;
    default:
      return (
        `${c.op} k${c.key} with ${c.age === 0 ? "the latest claim" : "the claim before it"}` +
        (c.op === "renew" ? ` for ${c.lease} lease` : "") +
        (c.op === "complete" && c.payload !== undefined
          ? ` result ${resultOf(c.payload) ?? "none"}`
          : "")
      );
  }
}

// --- the model: the records a store could hold ------------------------------------------

/** A closed interval of epoch ms. */
interface Span {
  lo: number;
  hi: number;
}

/** A record the store could hold, its times known to lie in intervals. */
interface ModelRecord {
  state: "claimed" | "done";
  fencingId: number;
  lease: Span;
  expires: Span;
  /** What the record keeps beyond its lease (a backend with `supports`), known exactly. */
  fingerprint?: string | undefined;
  result?: string | undefined;
}

/** One possibility for a key: a record, or none (never written, or deleted past expiry). */
type Slot = ModelRecord | undefined;

const point = (t: number): Span => ({ lo: t, hi: t });
const hull = (a: Span | undefined, b: Span): Span =>
  a === undefined ? b : { lo: Math.min(a.lo, b.lo), hi: Math.max(a.hi, b.hi) };
const within = (t: number, s: Span) => s.lo <= t && t <= s.hi;

/**
 * Concrete records standing for every record a slot allows, as far as a call in `window` can
 * tell them apart: each time field at its interval's ends, and at each moment next to the
 * window's ends that falls inside it. A guard compares the field with the call's moment, so
 * the values that pass it form an interval whose ends are among these; an answer that carries
 * the field (held's lease end) then spans exactly the values that give it.
 */
function corners(slot: Slot, window: Span): (LockRecord | undefined)[] {
  if (slot === undefined) return [undefined];
  const values = (s: Span) => {
    const out = new Set([s.lo, s.hi]);
    for (const t of [window.lo, window.lo + 1, window.hi, window.hi + 1]) {
      if (within(t, s)) out.add(t);
    }
    return out;
  };
  const out: LockRecord[] = [];
  for (const leaseExpiresAt of values(slot.lease)) {
    for (const expiresAt of values(slot.expires)) {
      const { state, fencingId, fingerprint, result } = slot;
      out.push({ state, fencingId, leaseExpiresAt, expiresAt, fingerprint, result });
    }
  }
  return out;
}

/**
 * The moments of `window` at which the table's answer on `record` can differ: its ends, and
 * each side of the record's lease end and expiry when inside it. Guards compare
 * `now < bound`, so an answer changes only between `bound - 1` and `bound`.
 */
function criticalTimes(
  window: Span,
  record: LockRecord | undefined,
  moments: readonly number[] = [],
): number[] {
  const times = new Set([window.lo, window.hi]);
  for (const t of moments) if (within(t, window)) times.add(t);
  if (record !== undefined) {
    for (const bound of [record.leaseExpiresAt, record.expiresAt]) {
      for (const t of [bound - 1, bound]) if (within(t, window)) times.add(t);
    }
  }
  return [...times];
}

/** An answer reduced to what must match exactly, plus the one time it may carry. */
interface Shape {
  shape: string;
  time?: number | undefined;
}

function claimShape(outcome: ClaimOutcome): Shape {
  switch (outcome.status) {
    case "won":
      return {
        shape: `won fence ${fenceShape(outcome.claim.fencingId)}`,
        time: outcome.claim.leaseExpiresAt,
      };
    case "held":
      return {
        shape: `held${fieldsShape(outcome.fingerprint, undefined)}`,
        time: outcome.leaseExpiresAt,
      };
    default:
      return { shape: `done${fieldsShape(outcome.fingerprint, outcome.result)}` };
  }
}

const valueShape = (answer: unknown): Shape => ({ shape: String(answer) });

/** The record fields an answer carries, each only when present. */
function fieldsShape(fingerprint: string | undefined, result: string | undefined): string {
  return (
    (fingerprint === undefined ? "" : ` fingerprint ${fingerprint}`) +
    (result === undefined ? "" : ` result ${result}`)
  );
}

/** One way the call could have gone: the answer, the row, and the records it leaves. */
interface Possibility {
  shape: string;
  row: string;
  /** Which of the records the store could hold it starts from. */
  source: number;
  /** The hull of the answer's time over the moments that give this answer. */
  time: Span | undefined;
  /** The record left behind: unchanged `from`, or the hull of what the table writes. */
  next: Slot;
}

interface Explored {
  possibilities: Possibility[];
  /** The answers at the client's best estimate: the window's midpoint, the records' midpoints. */
  estimate: Set<string>;
}

/**
 * The fence the table is given for a record created where none is stored: a stand-in, since
 * the store picks it (its clock or a sequence). A won answer matches it when its fence is above
 * every fence the key had (the fence never restarts); the record then takes the answer's fence.
 */
const FIRST_FENCE = -1;
const fenceShape = (fence: number) => (fence === FIRST_FENCE ? "new, above the key's" : `${fence}`);

/** Marks the rows that apply to a record deleted past its expiry. */
const DELETED = "deleted, ";

const mid = (s: Span) => Math.floor((s.lo + s.hi) / 2);

/**
 * Every answer the table gives for one call on any of `slots` at any moment of `window`,
 * with the record each leaves. Where the store `deletes` expired records (Redis PEXPIREAT,
 * a TTL policy, InMemoryLock's sweep), one that may be past its expiry may also be gone.
 */
function explore<A>(
  slots: readonly Slot[],
  window: Span,
  decide: (record: LockRecord | undefined, now: number) => Transition<A>,
  shapeOf: (answer: A) => Shape,
  deletes: boolean,
  variants: (answer: A) => { tag: string; answer: A }[] = (answer) => [{ tag: "", answer }],
  /** Moments worth judging the call at besides the window's ends and the record's bounds. */
  moments: readonly number[] = [],
): Explored {
  const groups = new Map<string, Possibility & { written?: LockRecord[] }>();
  const estimate = new Set<string>();
  for (const from of slots) {
    const sources: { tag: string; slot: Slot }[] = [{ tag: "", slot: from }];
    if (deletes && from !== undefined && window.hi >= from.expires.lo) {
      sources.push({ tag: DELETED, slot: undefined });
    }
    for (const source of sources) {
      for (const record of corners(source.slot, window)) {
        for (const now of criticalTimes(window, record, moments)) {
          const transition = decide(record, now);
          for (const { tag, answer } of variants(transition.answer)) {
            const { shape, time } = shapeOf(answer);
            const row = `${source.tag}${transition.row}${tag}`;
            const id = `${slots.indexOf(from)}|${row}|${shape}`;
            let group = groups.get(id);
            if (group === undefined) {
              group = {
                shape,
                row,
                source: slots.indexOf(from),
                time: undefined,
                next: source.slot,
              };
              groups.set(id, group);
            }
            if (time !== undefined) group.time = hull(group.time, point(time));
            const write = transition.write;
            if (write !== undefined) {
              group.written ??= [];
              group.written.push(write);
            }
          }
        }
      }
      // The estimate: the table's answer at the midpoint of everything uncertain.
      if (source.tag === "" || mid(window) >= (from?.expires.lo ?? 0)) {
        const record =
          source.slot === undefined
            ? undefined
            : {
                state: source.slot.state,
                fencingId: source.slot.fencingId,
                leaseExpiresAt: mid(source.slot.lease),
                expiresAt: mid(source.slot.expires),
                fingerprint: source.slot.fingerprint,
                result: source.slot.result,
              };
        estimate.add(shapeOf(decide(record, mid(window)).answer).shape);
      }
    }
  }
  const possibilities: Possibility[] = [];
  for (const { written, ...group } of groups.values()) {
    if (written !== undefined) {
      const first = written[0]!;
      let lease: Span | undefined;
      let expires: Span | undefined;
      for (const w of written) {
        assert.equal(w.state, first.state, "one row writes one state");
        assert.equal(w.fencingId, first.fencingId, "one row writes one fence");
        assert.equal(w.fingerprint, first.fingerprint, "one row writes one fingerprint");
        assert.equal(w.result, first.result, "one row writes one result");
        lease = hull(lease, point(w.leaseExpiresAt));
        expires = hull(expires, point(w.expiresAt));
      }
      group.next = {
        state: first.state,
        fencingId: first.fencingId,
        lease: lease!,
        expires: expires!,
        fingerprint: first.fingerprint,
        result: first.result,
      };
    }
    possibilities.push(group);
  }
  return { possibilities, estimate };
}

/** One record per state and fence, its intervals merged; at most one "no record". */
function merge(slots: readonly Slot[]): Slot[] {
  const byId = new Map<string, Slot>();
  for (const slot of slots) {
    const id =
      slot === undefined
        ? "absent"
        : `${slot.state}/${slot.fencingId}/${slot.fingerprint ?? ""}/${slot.result ?? ""}`;
    const seen = byId.get(id);
    if (seen === undefined || slot === undefined) {
      byId.set(id, slot);
      continue;
    }
    byId.set(id, {
      ...seen,
      lease: hull(seen.lease, slot.lease),
      expires: hull(seen.expires, slot.expires),
    });
  }
  return [...byId.values()];
}

// --- showing a sequence ------------------------------------------------------------------

function showSlots(slots: readonly Slot[], t0: number): string {
  const at = (s: Span) => (s.lo === s.hi ? `${s.lo - t0}` : `${s.lo - t0}..${s.hi - t0}`);
  return slots
    .map((s) =>
      s === undefined
        ? "none"
        : `${s.state} fence ${s.fencingId} lease→${at(s.lease)} expires→${at(s.expires)}` +
          (s.fingerprint === undefined ? "" : ` fingerprint ${s.fingerprint}`) +
          (s.result === undefined ? "" : ` result ${s.result}`),
    )
    .join(" | ");
}

function showAnswer(answer: unknown, t0: number): string {
  if (answer === undefined) return "undefined";
  return JSON.stringify(answer, (name, value) =>
    (name === "leaseExpiresAt" || name === "expiresAt") && typeof value === "number"
      ? `t+${value - t0}`
      : value,
  );
}

// --- running one sequence ----------------------------------------------------------------

/** The clock's grain: the client and the store each truncate or round to whole ms. */
const GRAIN_MS = 1;

interface Counters {
  commands: number;
  ambiguous: number;
  offEstimate: number;
  forks: number;
  maybeDeleted: number;
  deleted: number;
  rows: Map<string, number>;
}

interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
  /** The grain to allow either side of a window; 0 for an injected clock. */
  grain: number;
}

class Sequence {
  private readonly keys: string[];
  private readonly slots: Slot[][] = Array.from({ length: KEYS }, () => [undefined]);
  /** The claims won on each key, latest first. */
  private readonly won: Claim[][] = Array.from({ length: KEYS }, () => []);
  /** The highest fence each key's record has had: a new record must start above it. */
  private readonly highest: number[] = Array.from({ length: KEYS }, () => 0);
  private readonly trace: string[] = [];
  private readonly t0: number;
  private readonly deletes: boolean;

  constructor(
    private readonly target: ModelTarget,
    private readonly clock: Clock,
    /** What is known of store time minus client time. */
    private offset: Span,
    prefix: string,
    private readonly counters: Counters,
  ) {
    this.keys = Array.from({ length: KEYS }, (_, i) => `${prefix}k${i}`);
    this.t0 = clock.now();
    this.deletes = target.deletesExpired ?? true;
  }

  async run(commands: readonly ModelCommand[]): Promise<void> {
    for (const [i, command] of commands.entries()) {
      try {
        await this.step(command);
      } catch (error) {
        const shown = commands.map((c, j) => `${j === i ? "→" : " "} ${j}. ${showCommand(c)}`);
        const reason = error instanceof Error ? error.message : String(error);
        throw new assert.AssertionError({
          message:
            `${this.target.name}: command ${i} (${showCommand(command)}) failed: ` +
            `${reason}\n\nCommands:\n${shown.join("\n")}\n\nTrace (times in ms ` +
            `after the sequence started, store clock = client clock + offset):\n` +
            `${this.trace.join("\n")}`,
        });
      }
    }
  }

  private async step(command: ModelCommand): Promise<void> {
    const { target } = this;
    if (command.op === "wait") {
      const ms = Math.max(1, Math.round(command.fraction * target.leaseMs));
      await this.clock.sleep(ms);
      this.trace.push(`  ${showCommand(command)} (${ms} ms)`);
      return;
    }
    this.counters.commands += 1;
    const { backend, ttlMs } = target;
    const key = this.keys[command.key]!;
    const slots = this.slots[command.key]!;
    // The claim of that age, else the latest; on a key never won, a forged one at fence 1.
    const claims = this.won[command.key]!;
    const claim = (command.op !== "claim" && (claims[command.age] ?? claims[0])) || {
      key,
      fencingId: 1,
      leaseExpiresAt: 0,
    };
    const leaseMs = command.op === "claim" || command.op === "renew" ? this.leaseOf(command) : 0;

    // What to send, and what the table makes of it.
    let send: () => Promise<unknown>;
    let decide: (record: LockRecord | undefined, now: number) => Transition<unknown>;
    switch (command.op) {
      case "claim": {
        const fingerprint = fingerprintOf(command.payload);
        const call = { key, leaseMs, ttlMs, fingerprint };
        send = () =>
          fingerprint === undefined
            ? backend.claim(key, leaseMs)
            : backend.claim(key, leaseMs, { fingerprint });
        // A record whose fence was never seen (a win answered `held`, its lease lapsed on
        // return) stays unseen through a reclaim: the store's fence + 1 is a fresh fence too.
        decide = (record, now) =>
          claimTransition(
            record?.fencingId === FIRST_FENCE ? { ...record, fencingId: FIRST_FENCE - 1 } : record,
            now,
            call,
            FIRST_FENCE,
          );
        break;
      }
      case "complete": {
        const result = resultOf(command.payload);
        const call = { claim, ttlMs, result };
        send = () =>
          result === undefined ? backend.complete(claim) : backend.complete(claim, result);
        decide = (record, now) => completeTransition(record, now, call);
        break;
      }
      case "release": {
        const call = { claim, ttlMs };
        send = () => backend.release(claim);
        decide = (record, now) => releaseTransition(record, now, call);
        break;
      }
      case "renew": {
        const call = { claim, leaseMs, ttlMs };
        send = () => backend.renew!(claim, leaseMs);
        decide = (record, now) => renewTransition(record, now, call);
        break;
      }
    }
    const shapeOf = (answer: unknown) =>
      command.op === "claim" ? claimShape(answer as ClaimOutcome) : valueShape(answer);

    const sent = this.clock.now();
    const answer = await send().catch((error: unknown) => {
      this.trace.push(`  ${showCommand(command)}: threw ${String(error)}`);
      throw new Error(`the backend threw, where the table answers: ${String(error)}`, {
        cause: error,
      });
    });
    const received = this.clock.now();
    const g = this.clock.grain;
    const lag = this.target.clockLagMs ?? 0;
    const window = { lo: sent + this.offset.lo - g - lag, hi: received + this.offset.hi + g };
    const { possibilities, estimate } = explore(
      slots,
      window,
      decide,
      shapeOf,
      this.deletes,
      (a) =>
        command.op === "claim"
          ? this.claimVariants(a as ClaimOutcome, window)
          : [{ tag: "", answer: a }],
      // A store that answers a lapsed win `held` may have judged the claim at any moment up to
      // the last one whose lease had ended by the answer: that moment bounds the held lease end.
      command.op === "claim" && this.target.lapsedWinAnswersHeld ? [window.hi + lag - leaseMs] : [],
    );
    const actual = shapeOf(answer);

    const span = (s: Span) =>
      Number.isFinite(s.lo + s.hi) ? `${s.lo - this.t0}..${s.hi - this.t0}` : "unknown";
    const line =
      `  ${showCommand(command)}: store time ${span(window)}, ` +
      `records ${showSlots(slots, this.t0)}\n    the table allows: ` +
      possibilities
        .map((p) => `${p.shape}${p.time ? ` (t ${span(p.time)})` : ""} [${p.row}]`)
        .join("; ") +
      `\n    answer: ${showAnswer(answer, this.t0)}`;
    this.trace.push(line);

    const highest = this.highest[command.key]!;
    const fresh =
      command.op === "claim" &&
      (answer as ClaimOutcome).status === "won" &&
      (answer as { claim: Claim }).claim.fencingId > highest;
    const firstShape = `won fence ${fenceShape(FIRST_FENCE)}`;
    const matching = possibilities.filter(
      (p) =>
        (p.shape === actual.shape || (fresh && p.shape === firstShape)) &&
        (actual.time === undefined ||
          p.time === undefined ||
          within(actual.time, { lo: p.time.lo - g, hi: p.time.hi + g })),
    );
    assert.ok(
      matching.length > 0,
      "its answer is not the table's: no row gives it at any moment the store could have judged the call at",
    );

    // The window at work: one record the store could hold allows more than one answer.
    const kept = possibilities.filter((p) => !p.row.startsWith(DELETED));
    const shapesOf = (source: number) =>
      new Set(kept.filter((p) => p.source === source).map((p) => p.shape));
    if (slots.some((_, source) => shapesOf(source).size > 1)) {
      this.counters.ambiguous += 1;
      if (!estimate.has(actual.shape)) this.counters.offEstimate += 1;
    }
    if (new Set(possibilities.map((p) => p.shape)).size > new Set(kept.map((p) => p.shape)).size) {
      this.counters.maybeDeleted += 1;
      if (matching.every((p) => p.row.startsWith(DELETED))) this.counters.deleted += 1;
    }

    const rows = new Set(matching.map((p) => p.row));
    const row = rows.size === 1 ? [...rows][0]! : "(undecided)";
    this.counters.rows.set(row, (this.counters.rows.get(row) ?? 0) + 1);

    // Learn from the answer: a won or held claim names the lease end exactly.
    let next = matching.map((p) => p.next);
    if (command.op === "claim") {
      const outcome = answer as ClaimOutcome;
      const leaseEnd =
        outcome.status === "won"
          ? outcome.claim.leaseExpiresAt
          : outcome.status === "held"
            ? outcome.leaseExpiresAt
            : undefined;
      if (leaseEnd !== undefined) {
        next = next.map((s) =>
          s?.state === "claimed"
            ? { ...s, lease: point(leaseEnd), expires: point(leaseEnd + ttlMs) }
            : s,
        );
      }
      if (outcome.status === "won") {
        const { fencingId } = outcome.claim;
        next = next.map((s) => (s?.fencingId === FIRST_FENCE ? { ...s, fencingId } : s));
        this.won[command.key]!.unshift(outcome.claim);
        // The store's time at the claim, exactly: leaseExpiresAt = now + lease.
        const storeNow = outcome.claim.leaseExpiresAt - leaseMs;
        const learned = { lo: storeNow - received - g, hi: storeNow - sent + g + lag };
        const narrowed = {
          lo: Math.max(this.offset.lo, learned.lo),
          hi: Math.min(this.offset.hi, learned.hi),
        };
        assert.ok(
          narrowed.lo <= narrowed.hi,
          `the store's clock is not where it was: offset ${learned.lo}..${learned.hi} ms ` +
            `now, ${this.offset.lo}..${this.offset.hi} ms before`,
        );
        this.offset = narrowed;
      }
    }
    const merged = merge(next);
    if (merged.length > 1) this.counters.forks += 1;
    this.slots[command.key] = merged;
    for (const s of merged) {
      if (s !== undefined)
        this.highest[command.key] = Math.max(this.highest[command.key]!, s.fencingId);
    }
    this.trace.push(
      `    expected records now: ${showSlots(merged, this.t0)}; offset ${this.offset.lo}..${this.offset.hi}`,
    );
  }

  private leaseOf(command: { lease: number }): number {
    return Math.max(1, Math.round(command.lease * this.target.leaseMs));
  }

  /**
   * The answers a claim may give besides the table's: on a store that refuses to hand out a
   * win that outlasted its lease, a win whose lease had ended when the answer came back.
   */
  private claimVariants(
    outcome: ClaimOutcome,
    window: Span,
  ): { tag: string; answer: ClaimOutcome }[] {
    const variants = [{ tag: "", answer: outcome }];
    if (this.target.lapsedWinAnswersHeld && outcome.status === "won") {
      const lapsed = unlessLapsed(outcome, window.hi + (this.target.clockLagMs ?? 0));
      if (lapsed.status === "held") variants.push({ tag: " (lapsed on return)", answer: lapsed });
    }
    return variants;
  }
}

// --- the property --------------------------------------------------------------------------

/**
 * Run `numRuns` sequences against the table, failing with a readable counterexample; resolves
 * to what it saw. Each sequence uses keys of its own, under one prefix per run.
 */
export async function checkAgainstTable(
  target: ModelTarget,
  options: ModelRunOptions = {},
): Promise<ModelReport> {
  const started = Date.now();
  const runId = `model-${started.toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const clock: Clock =
    typeof target.clock === "object"
      ? {
          now: target.clock.now,
          sleep: async (ms) => (target.clock as { advance(ms: number): void }).advance(ms),
          grain: 0,
        }
      : {
          now: Date.now,
          sleep: (ms) => new Promise((done) => setTimeout(done, ms)),
          grain: GRAIN_MS,
        };
  // A store with a clock of its own: its offset from this process's clock is learned afresh in
  // each sequence, from its first won claim. Until then no record exists, and no answer
  // depends on the time.
  const offset: Span =
    target.clock === "server"
      ? { lo: Number.NEGATIVE_INFINITY, hi: Number.POSITIVE_INFINITY }
      : point(0);
  const counters: Counters = {
    commands: 0,
    ambiguous: 0,
    offEstimate: 0,
    forks: 0,
    maybeDeleted: 0,
    deleted: 0,
    rows: new Map(),
  };
  let sequences = 0;
  const numRuns = options.numRuns ?? 200;
  const supports = target.backend.supports;
  const payloads = supports?.fingerprints === true && supports.results === true;
  const commands = fc.array(commandArbitrary(target.backend.renew !== undefined, payloads), {
    minLength: 1,
    maxLength: options.maxCommands ?? 10,
  });
  await fc.assert(
    fc.asyncProperty(commands, async (sequence) => {
      const prefix = `${runId}:${sequences++}:`;
      await new Sequence(target, clock, offset, prefix, counters).run(sequence);
    }),
    {
      numRuns,
      // The counterexample's trace in the failure's own message, not only in its cause.
      includeErrorInReport: true,
      ...(options.seed === undefined ? {} : { seed: options.seed }),
      ...(options.path === undefined ? {} : { path: options.path }),
    },
  );
  return {
    name: target.name,
    sequences,
    ...counters,
    rows: Object.fromEntries([...counters.rows].sort(([a], [b]) => a.localeCompare(b))),
    leaseMs: target.leaseMs,
    ttlMs: target.ttlMs,
    elapsedMs: Date.now() - started,
  };
}

/** What {@link sizeLease} measured and chose. */
export interface LeaseSizing {
  leaseMs: number;
  coldMs: number;
  p50Ms: number;
  p90Ms: number;
}

/**
 * Warm `backend` up, time 30 calls (claim, complete, and a claim that finds the key done),
 * and choose the base lease: 10 times the median call and 4 times the 90th percentile,
 * whichever is longer, and never under `minLeaseMs`. A call's window is about one call long,
 * so a lease boundary falls inside the window of only a small share of the calls near it; the
 * median keeps that share steady, and the percentile keeps a slow call shorter than a lease.
 */
export async function sizeLease(
  backend: LockBackend,
  options: { minLeaseMs: number; prefix?: string },
): Promise<LeaseSizing> {
  const prefix =
    options.prefix ?? `size-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}:`;
  const { coldMs } = await warmUpBackend(backend, { keyPrefix: `${prefix}warm:` });
  const times: number[] = [];
  const timed = async <T>(call: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await call();
    times.push(performance.now() - started);
    return result;
  };
  for (let i = 0; i < 10; i++) {
    const key = `${prefix}${i}`;
    const outcome = await timed(() => backend.claim(key, 60_000));
    if (outcome.status === "won") await timed(() => backend.complete(outcome.claim));
    await timed(() => backend.claim(key, 60_000));
  }
  times.sort((a, b) => a - b);
  const quantile = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  const p50Ms = Math.ceil(quantile(0.5));
  const p90Ms = Math.ceil(quantile(0.9));
  const leaseMs = Math.max(options.minLeaseMs, 10 * p50Ms, 4 * p90Ms);
  return { leaseMs, coldMs, p50Ms, p90Ms };
}

/** How to make and time a backend for {@link runModel}. */
export interface ModelFixture {
  name: string;
  /** A backend with this ttl on a store (prefix, table, namespace) of its own. */
  make(ttlMs: number): LockBackend | Promise<LockBackend>;
  clock: ModelTarget["clock"];
  /** The shortest base lease to use, however fast the store; default 20 ms. */
  minLeaseMs?: number;
  lapsedWinAnswersHeld?: boolean;
  /** The backend's clock lag (see {@link ModelTarget.clockLagMs}), from the calls measured. */
  clockLagMs?: (sizing: LeaseSizing) => number;
  deletesExpired?: boolean;
}

/**
 * Size the lease on a backend of its own ({@link sizeLease}), then run the model on a fresh
 * one with a ttl of half the lease, and log what it saw.
 */
export async function runModel(
  fixture: ModelFixture,
  options: ModelRunOptions = {},
): Promise<ModelReport> {
  const started = Date.now();
  const probe = await fixture.make(60_000);
  let sizing: LeaseSizing;
  try {
    sizing = await sizeLease(probe, { minLeaseMs: fixture.minLeaseMs ?? 20 });
  } finally {
    await probe.close?.();
  }
  const { leaseMs } = sizing;
  const ttlMs = Math.ceil(leaseMs / 2);
  const backend = await fixture.make(ttlMs);
  try {
    const report = await checkAgainstTable(
      {
        name: fixture.name,
        backend,
        leaseMs,
        ttlMs,
        clock: fixture.clock,
        ...(fixture.lapsedWinAnswersHeld ? { lapsedWinAnswersHeld: true } : {}),
        ...(fixture.clockLagMs ? { clockLagMs: fixture.clockLagMs(sizing) } : {}),
        ...(fixture.deletesExpired === undefined ? {} : { deletesExpired: fixture.deletesExpired }),
      },
      options,
    );
    console.info(
      `${showReport(report)}\n  sizing: warm-up ${sizing.coldMs} ms, calls p50 ${sizing.p50Ms} ` +
        `ms, p90 ${sizing.p90Ms} ms; ${((Date.now() - started) / 1000).toFixed(1)} s in all`,
    );
    return report;
  } finally {
    await backend.close?.();
  }
}

/** A test timeout for {@link runModel} with `options`: generous, the machine is shared. */
export function modelTimeoutMs(options: ModelRunOptions = {}): number {
  return 120_000 + (options.numRuns ?? 200) * 2_000;
}

/** The numRuns, seed and path the environment asks for: MODEL_RUNS, MODEL_SEED, MODEL_PATH. */
export function modelRunOptionsFromEnv(env = process.env): ModelRunOptions {
  const runs = env.MODEL_RUNS === undefined ? undefined : Number(env.MODEL_RUNS);
  if (runs !== undefined && !(Number.isSafeInteger(runs) && runs > 0)) {
    throw new RangeError(`MODEL_RUNS must be a positive integer, got ${env.MODEL_RUNS}`);
  }
  return {
    ...(runs === undefined ? {} : { numRuns: runs }),
    ...(env.MODEL_SEED === undefined ? {} : { seed: Number(env.MODEL_SEED) }),
    ...(env.MODEL_PATH === undefined ? {} : { path: env.MODEL_PATH }),
  };
}

/** One line for the log. */
export function showReport(r: ModelReport): string {
  return (
    `[model] ${r.name}: ${r.sequences} sequences, ${r.commands} calls in ` +
    `${(r.elapsedMs / 1000).toFixed(1)} s (lease ${r.leaseMs} ms, ttl ${r.ttlMs} ms); ` +
    `window ambiguous ${r.ambiguous} (answered off the estimate ${r.offEstimate}), ` +
    `forks ${r.forks}, maybe deleted ${r.maybeDeleted} (deleted ${r.deleted})\n  rows: ` +
    Object.entries(r.rows)
      .map(([row, n]) => `${row} ${n}`)
      .join(", ")
  );
}
