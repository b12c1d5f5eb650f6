// The network-fault storm's parent: it plays Pub/Sub for consumer processes
// (network-storm-child.ts) whose store traffic goes through a fault proxy, while a fault
// schedule runs on the proxy. Messages are published over the schedule; each is delivered to
// one consumer at a time, redelivered after a nack, after its consumer died, or when its ack
// deadline passes unanswered (a second copy then runs beside the first, as Pub/Sub does), until
// one consumer acks it. At each ack the sink must already hold the message's effect.
import { type ChildProcess, fork } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FaultProxy } from "./fault-proxy.js";
import type { FencedSink } from "./fenced-sink.js";
import {
  type ChildCounts,
  noCounts,
  type StormChildConfig,
  type StormDelivery,
  type StormReply,
} from "./network-storm-protocol.js";

const here = fileURLToPath(new URL(".", import.meta.url));

export interface StormPlan {
  readonly child: Omit<StormChildConfig, "sinkUrl" | "drainMs">;
  /** Environment of the consumers beyond this process's (DATASTORE_EMULATOR_HOST). */
  readonly env?: Record<string, string>;
  readonly proxy: FaultProxy;
  readonly sink: FencedSink;
  readonly messages: number;
  readonly consumers: number;
  /** Messages one consumer holds at once (a pull client's flow control). */
  readonly inFlight: number;
  /** The replies' latency in the latency bursts: beyond the lease. */
  readonly latencyMs: number;
  readonly blackholeMs: number;
  /** How long after the heal every message must be acked. */
  readonly healDeadlineMs: number;
}

export interface FaultCounts {
  latencyPhases: number;
  resets: number;
  blackholes: number;
  /** Chunks the partition held and sent at heal. */
  heldChunks: number;
}

export interface StormResult {
  deliveries: number;
  acks: number;
  nacks: number;
  /** Copies delivered because an earlier delivery passed its ack deadline unanswered. */
  deadlineCopies: number;
  faults: FaultCounts;
  counts: ChildCounts;
  /** Deliveries still unsettled in a consumer when it was told to stop (a hang). */
  stuck: number;
  /** Consumers that exited without being told to. */
  crashes: number;
  ackedWithoutEffect: string[];
  unacked: string[];
  /** Seconds until every consumer was ready, from the heal to the last ack, to stop them. */
  startSeconds: number;
  healSeconds: number;
  stopSeconds: number;
  seconds: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The schedule, in leases: calm, latency beyond the lease, resets mid-reply, a partition. */
async function runFaults(plan: StormPlan, leaseMs: number, faults: FaultCounts): Promise<void> {
  const { proxy } = plan;
  await sleep(2 * leaseMs);
  // Replies slower than the lease, in bursts, on every other connection (odd ones, then
  // even ones): a holder on a slow path gets its win after the lease lapsed, and after a
  // redelivered copy on a fast path won and wrote, so two holders run, the older one last.
  for (let burst = 0; burst < 3; burst++) {
    proxy.latency(plan.latencyMs, "down", (connection) => connection % 2 === burst % 2);
    faults.latencyPhases++;
    await sleep(2.5 * leaseMs);
    proxy.latency(0);
    await sleep(leaseMs);
  }
  for (let i = 0; i < 6; i++) {
    // The next reply on any connection is cut; with no traffic it stays armed, and fires later.
    await Promise.race([proxy.resetMidReply(), sleep(leaseMs)]);
    await sleep(leaseMs / 3);
  }
  await sleep(leaseMs);
  proxy.blackhole();
  faults.blackholes++;
  await sleep(plan.blackholeMs);
  proxy.heal();
}

/** How long the schedule runs, for spreading the publishing over it. */
export const scheduleMs = (leaseMs: number, blackholeMs: number) => 19 * leaseMs + blackholeMs;

interface Consumer {
  child: ChildProcess;
  ready: boolean;
  stopping: boolean;
  /** The deliveries it holds, each with its ack-deadline timer. */
  held: Map<string, NodeJS.Timeout>;
}

export async function runStorm(plan: StormPlan): Promise<StormResult> {
  const started = Date.now();
  const { leaseMs } = plan.child;
  const ackDeadlineMs = 2 * leaseMs;
  const result: StormResult = {
    deliveries: 0,
    acks: 0,
    nacks: 0,
    deadlineCopies: 0,
    faults: { latencyPhases: 0, resets: 0, blackholes: 0, heldChunks: 0 },
    counts: noCounts(),
    stuck: 0,
    crashes: 0,
    ackedWithoutEffect: [],
    unacked: [],
    startSeconds: 0,
    healSeconds: 0,
    stopSeconds: 0,
    seconds: 0,
  };
  const ids = Array.from({ length: plan.messages }, (_, i) => `m-${i}`);
  const acked = new Set<string>();
  const pending: string[] = [];
  let published = 0;
  let allAcked: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    allAcked = resolve;
  });
  const consumers: Consumer[] = [];
  const config: StormChildConfig = {
    ...plan.child,
    sinkUrl: plan.sink.url,
    drainMs: Math.max(10_000, 4 * leaseMs),
  };

  const offer = (id: string) => {
    if (!acked.has(id) && !pending.includes(id)) pending.push(id);
  };
  const dispatch = () => {
    for (let turn = 0; turn < pending.length; ) {
      const id = pending[turn]!;
      const consumer = consumers
        .filter((c) => c.ready && !c.stopping && c.held.size < plan.inFlight && !c.held.has(id))
        .sort((a, b) => a.held.size - b.held.size)[0];
      if (consumer === undefined) {
        turn++;
        continue;
      }
      pending.splice(turn, 1);
      result.deliveries++;
      const deadline = setTimeout(() => {
        if (acked.has(id)) return;
        result.deadlineCopies++;
        offer(id);
        dispatch();
      }, ackDeadlineMs);
      consumer.held.set(id, deadline);
      consumer.child.send({ id } satisfies StormDelivery);
    }
  };
  const settle = (consumer: Consumer, id: string) => {
    clearTimeout(consumer.held.get(id));
    consumer.held.delete(id);
  };
  const redeliver = (id: string) => {
    // A subscription's retry policy: a short pause before the nacked message comes back.
    setTimeout(() => {
      offer(id);
      dispatch();
    }, leaseMs / 4);
  };

  const start = (slot: number) => {
    const child = fork(join(here, "network-storm-child.ts"), [JSON.stringify(config)], {
      execArgv: ["--import", "tsx", "--import", join(here, "../../scripts/text-loader.mjs")],
      env: { ...process.env, ...plan.env },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const consumer: Consumer = { child, ready: false, stopping: false, held: new Map() };
    consumers[slot] = consumer;
    child.on("message", (reply: StormReply) => {
      if ("ready" in reply) {
        consumer.ready = true;
        dispatch();
        return;
      }
      if ("stopped" in reply) {
        result.stuck += reply.stuck;
        for (const [name, value] of Object.entries(reply.counts)) {
          result.counts[name as keyof ChildCounts] += value;
        }
        return;
      }
      settle(consumer, reply.id);
      if (acked.has(reply.id)) return; // a late copy of an acked message: Pub/Sub drops it
      if (reply.outcome === "ran" || reply.outcome === "duplicate") {
        result.acks++;
        if (!plan.sink.effects.has(reply.id)) result.ackedWithoutEffect.push(reply.id);
        acked.add(reply.id);
        if (acked.size === plan.messages) allAcked();
      } else {
        result.nacks++;
        redeliver(reply.id);
      }
      dispatch();
    });
    child.on("exit", () => {
      if (consumer.stopping) return;
      result.crashes++;
      for (const id of consumer.held.keys()) {
        settle(consumer, id);
        redeliver(id);
      }
      start(slot);
    });
  };
  for (let slot = 0; slot < plan.consumers; slot++) start(slot);
  while (!consumers.every((c) => c.ready)) await sleep(20);
  result.startSeconds = (Date.now() - started) / 1000;

  const span = scheduleMs(leaseMs, plan.blackholeMs);
  const publisher = setInterval(() => {
    if (published < plan.messages) offer(ids[published++]!);
    dispatch();
  }, span / plan.messages);
  await runFaults(plan, leaseMs, result.faults);
  const healed = Date.now();
  const timeout = sleep(plan.healDeadlineMs).then(() => "timeout" as const);
  // Whatever was not published yet goes now: the schedule is over.
  while (published < plan.messages) offer(ids[published++]!);
  dispatch();
  await Promise.race([done, timeout]);
  clearInterval(publisher);
  result.healSeconds = (Date.now() - healed) / 1000;
  result.unacked = ids.filter((id) => !acked.has(id));
  const { resets, heldChunks } = plan.proxy.stats();
  result.faults.resets = resets;
  result.faults.heldChunks = heldChunks;

  // Stop every consumer: each drains what it holds, reports, and exits 0.
  const stopping = Date.now();
  await Promise.all(
    consumers.map(
      (consumer) =>
        new Promise<void>((resolve) => {
          consumer.stopping = true;
          for (const timer of consumer.held.values()) clearTimeout(timer);
          consumer.child.once("exit", (code) => {
            if (code !== 0) result.crashes++;
            resolve();
          });
          consumer.child.send({ stop: true } satisfies StormDelivery);
        }),
    ),
  );
  result.stopSeconds = (Date.now() - stopping) / 1000;
  result.seconds = (Date.now() - started) / 1000;
  return result;
}
