/**
 * The scenarios: what each publishes, when it is settled, and what must then be true of the
 * supplier's and the workers' records. Each owns its topics and keys (`<scenario>/...`), so
 * the quiet ones run side by side; the crash storm runs alone, since it kills workers.
 */
import type { PubSub, Topic } from "@google-cloud/pubsub";
import { PROJECT } from "../test/support/gcloud-emulator.js";
import type { Supplier } from "../test/support/supplier.js";
import type { PushProxy } from "./proxy.js";
import type { Delivery, WorkerEvent } from "./records.js";
import type { StepArrival } from "./step-ledger.js";

/** The emulator treats shorter backoffs as about 1 s, then 3 s (see the README). */
export const RETRY_POLICY = {
  minimumBackoff: { seconds: 1 },
  maximumBackoff: { seconds: 2 },
} as const;
export const DEAD_LETTER_ATTEMPTS = 5;

export interface Context {
  readonly pubsub: PubSub;
  readonly proxy: PushProxy;
  readonly supplier: Supplier;
  readonly run: string;
  /** Orders received on the dead-letter topics, by the harness's pull subscriber. */
  readonly deadLettered: Map<string, { deliveryCount: string; subscription: string }>;
  readonly random: () => number;
  /** Pull subscribers and the like the harness must close at the end. */
  readonly closers: (() => Promise<void>)[];
  /** The transactional sink's PostgreSQL database, as the workers write it. */
  readonly database: SinkDatabase;
}

/** What the harness reads back from the transactional sink's database. */
export interface SinkDatabase {
  /** Rows of the `orders` table (no unique constraint) per order id, and the DONE records. */
  tally(): Promise<SinkTally>;
  /** The step storm: every row of its three step sinks whose key is under `scenario`. */
  stepArrivals(scenario: string): Promise<StepArrival[]>;
  /** The step storm on SqlLock: DONE records in `step_records` (deliveries and steps). */
  stepDoneRecords(): Promise<number>;
}

export interface PublishedMessage {
  readonly messageId: string;
  readonly orderId: string;
  /** A message that must end on the dead-letter topic instead of being acked. */
  readonly poison: boolean;
  /** The subscriptions that must each ack it. */
  readonly subscriptions: readonly string[];
}

export interface Figures {
  scenario: string;
  messages: number;
  subscriptions: number;
  pushes: number;
  /** Pushes the harness re-sent for nacked messages the emulator stopped redelivering. */
  repushes: number;
  deliveries: number;
  bodyRuns: number;
  duplicatesSkipped: number;
  contentionNacks: number;
  bodyFailures: number;
  crashes: number;
  /** Wins over a claim whose lease lapsed (its holder crashed or stalled). */
  reclaims: number;
  /** Wins over a claim its holder released (the body failed). */
  reclaimsAfterRelease: number;
  fencedOut: number;
  supplierOrders: number;
  supplierExactlyOnce: number;
  supplierMissing: number;
  supplierExtra: number;
  supplierResendsDeduplicated: number;
  /** Every POST that reached the supplier for the scenario's orders, re-sends included. */
  supplierArrivals: number;
  /** Orders a worker sent and died before completing, that a later worker sent again. */
  resentAfterCrash: number;
  /** Messages waited for past the stall cutoff because a dead worker's emulator lock held them. */
  emulatorLockWaits: number;
  unacked: number;
  seconds: number;
  notes: Record<string, unknown>;
  violations: string[];
}

export interface ScenarioRecords {
  readonly published: readonly PublishedMessage[];
  readonly subscriptions: readonly string[];
  readonly deliveries: readonly Delivery[];
  readonly events: readonly WorkerEvent[];
}

export interface Scenario {
  readonly name: string;
  /** What it proves, one line (printed under the table). */
  readonly claim: string;
  /** Create topics and push subscriptions, publish; resolves to what was published. */
  publish(ctx: Context): Promise<{ published: PublishedMessage[]; subscriptions: string[] }>;
  /** Scenario-specific checks on the figures; push violations, add notes. */
  check(figures: Figures, records: ScenarioRecords, ctx: Context): void;
  /**
   * When the sink is not the supplier, what landed there. The harness then checks these
   * counts (exactly once, none missing) instead of the supplier's.
   */
  sink?(ctx: Context, records: SinkRecords): Promise<SinkTally>;
  /**
   * Read what the sink's books need before the harness reads the workers' events: a worker
   * still running writes its event before its effect, so every row read then has its run in
   * the events read after.
   */
  readSink?(ctx: Context): Promise<void>;
}

/** What a sink's own books may read beside the sink: the scenario's records of the run. */
export interface SinkRecords {
  readonly published: readonly PublishedMessage[];
  readonly events: readonly WorkerEvent[];
  /** Worker processes that died during the run. */
  readonly deadPids: ReadonlySet<number>;
}

/** A sink of the scenario's own: the orders it holds, and the keys completed beside them. */
export interface SinkTally {
  /** How many times each order id landed. */
  readonly counts: ReadonlyMap<string, number>;
  /**
   * Records in the DONE state: one per order when DONE commits with the order's row. Absent
   * when the scenario checks its records itself.
   */
  readonly doneRecords?: number;
  /** The sink's own books: notes for the figures, and what they found violated. */
  readonly notes?: Readonly<Record<string, unknown>>;
  readonly violations?: readonly string[];
}

export interface SubscriptionSpec {
  readonly name: string;
  readonly ackDeadlineSeconds?: number;
  readonly deadLetterTopic?: string;
}

export interface PushTopic {
  readonly topic: Topic;
  readonly subscriptions: readonly string[];
}

export async function pushTopic(
  ctx: Context,
  name: string,
  subscriptions: readonly SubscriptionSpec[],
): Promise<PushTopic> {
  const topicName = `${name}-${ctx.run}`;
  const [topic] = await ctx.pubsub.createTopic(topicName);
  for (const spec of subscriptions) {
    await topic.createSubscription(spec.name, {
      // The topic in the path lets functions-framework name the CloudEvent's source.
      pushConfig: { pushEndpoint: `${ctx.proxy.url}/projects/${PROJECT}/topics/${topicName}` },
      retryPolicy: RETRY_POLICY,
      ackDeadlineSeconds: spec.ackDeadlineSeconds ?? 10,
      ...(spec.deadLetterTopic
        ? {
            deadLetterPolicy: {
              deadLetterTopic: spec.deadLetterTopic,
              maxDeliveryAttempts: DEAD_LETTER_ATTEMPTS,
            },
          }
        : {}),
    });
  }
  return { topic, subscriptions: subscriptions.map((s) => s.name) };
}

export interface Order {
  readonly orderId: string;
  readonly attributes?: Readonly<Record<string, string>>;
  /** Passed to the supplier by the body: holdMs, failFirst. */
  readonly behaviour?: Readonly<Record<string, number>>;
}

export async function publishOrders(
  { topic, subscriptions }: PushTopic,
  scenario: string,
  orders: readonly Order[],
): Promise<PublishedMessage[]> {
  return Promise.all(
    orders.map(async (order) => {
      const attributes: Record<string, string> = {
        scenario,
        orderId: order.orderId,
        ...order.attributes,
      };
      const messageId = await topic.publishMessage({
        // functions-framework only converts a push body whose message has data.
        data: Buffer.from(JSON.stringify(order.behaviour ?? {})),
        attributes,
      });
      return {
        messageId,
        orderId: order.orderId,
        poison: attributes.poison === "1",
        subscriptions,
      };
    }),
  );
}

export const ids = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i + 1).padStart(4, "0")}`);

export function expectEqual(f: Figures, what: string, actual: number, expected: number): void {
  if (actual !== expected) f.violations.push(`${what}: ${actual}, expected ${expected}`);
}

export function expectAtLeast(f: Figures, what: string, actual: number, least: number): void {
  if (actual < least) f.violations.push(`${what}: ${actual}, expected at least ${least}`);
}

/** The gaps between successive pushes of each message, in ms (what the retry policy gave). */
function redeliveryGaps(deliveries: readonly Delivery[]): number[] {
  const byMessage = new Map<string, number[]>();
  for (const d of deliveries.filter((d) => d.answered)) {
    const times = byMessage.get(`${d.subscription}/${d.messageId}`) ?? [];
    times.push(d.t);
    byMessage.set(`${d.subscription}/${d.messageId}`, times);
  }
  const gaps: number[] = [];
  for (const times of byMessage.values()) {
    times.sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) gaps.push((times[i] ?? 0) - (times[i - 1] ?? 0));
  }
  return gaps;
}

export const QUIET_SCENARIOS: readonly Scenario[] = [
  {
    name: "acked-once",
    claim: "a message delivered and acked is processed once, and not delivered again",
    async publish(ctx) {
      const topic = await pushTopic(ctx, "acked", [{ name: `acked-${ctx.run}` }]);
      const published = await publishOrders(
        topic,
        "acked-once",
        ids("a", 20).map((orderId) => ({ orderId })),
      );
      return { published, subscriptions: [`acked-${ctx.run}`] };
    },
    check(f) {
      expectEqual(f, "body runs", f.bodyRuns, f.messages);
      expectEqual(f, "pushes", f.pushes, f.messages);
      expectEqual(f, "duplicates", f.duplicatesSkipped, 0);
    },
  },
  {
    name: "concurrent",
    claim:
      "one message delivered to 4 instances at once (proxy fan-out), and one the emulator redelivers while the first delivery still runs, are each processed once",
    async publish(ctx) {
      const fanout = await pushTopic(ctx, "fanout", [{ name: `fanout-${ctx.run}` }]);
      const slow = await pushTopic(ctx, "slowack", [{ name: `slowack-${ctx.run}` }]);
      const published = [
        ...(await publishOrders(
          fanout,
          "concurrent",
          ids("c", 8).map((orderId) => ({ orderId, attributes: { fanout: "4" } })),
        )),
        // Held past the 10 s ack deadline: the emulator redelivers it while it runs.
        ...(await publishOrders(slow, "concurrent", [
          { orderId: "c-slow", behaviour: { holdMs: 12_000 } },
        ])),
      ];
      return { published, subscriptions: [`fanout-${ctx.run}`, `slowack-${ctx.run}`] };
    },
    check(f, records) {
      expectEqual(f, "body runs", f.bodyRuns, f.messages);
      // Every copy beyond the one that ran was skipped (duplicate) or refused (held).
      expectAtLeast(
        f,
        "copies skipped or refused",
        f.duplicatesSkipped + f.contentionNacks,
        f.deliveries - f.messages,
      );
      const slowPushes = records.deliveries.filter(
        (d) => d.subscription.startsWith("slowack") && d.answered,
      );
      f.notes.slowMessagePushes = slowPushes.length;
      // Did the emulator push it again while an earlier push of it was still running?
      f.notes.emulatorRedeliveredWhileRunning = slowPushes.some((a) =>
        slowPushes.some((b) => b !== a && b.startedAt > a.startedAt && b.startedAt < a.t),
      );
    },
  },
  {
    name: "two-subscriptions",
    claim: "two subscriptions on one topic (same messageId) process each message once",
    async publish(ctx) {
      const subscriptions = [`first-${ctx.run}`, `second-${ctx.run}`];
      const topic = await pushTopic(
        ctx,
        "fan",
        subscriptions.map((name) => ({ name })),
      );
      const published = await publishOrders(
        topic,
        "two-subscriptions",
        ids("t", 10).map((orderId) => ({ orderId })),
      );
      return { published, subscriptions };
    },
    check(f) {
      expectEqual(f, "body runs", f.bodyRuns, f.messages);
      expectAtLeast(f, "pushes", f.pushes, 2 * f.messages);
      expectEqual(f, "duplicates skipped", f.duplicatesSkipped, f.messages);
    },
  },
  {
    name: "transient",
    claim:
      "a body that fails twice (supplier 503, nack) is redelivered by Pub/Sub and succeeds once",
    async publish(ctx) {
      const topic = await pushTopic(ctx, "flaky", [{ name: `flaky-${ctx.run}` }]);
      const published = await publishOrders(
        topic,
        "transient",
        ids("f", 5).map((orderId) => ({ orderId, behaviour: { failFirst: 2 } })),
      );
      return { published, subscriptions: [`flaky-${ctx.run}`] };
    },
    check(f, records) {
      expectEqual(f, "body runs", f.bodyRuns, 3 * f.messages);
      expectEqual(f, "body failures", f.bodyFailures, 2 * f.messages);
      expectEqual(f, "supplier re-sends de-duplicated", f.supplierResendsDeduplicated, 0);
      const gaps = redeliveryGaps(records.deliveries);
      f.notes.redeliveryGapsMs = gaps;
    },
  },
  {
    name: "republished",
    claim: "the same order republished (a new messageId, the same business key) is processed once",
    async publish(ctx) {
      const topic = await pushTopic(ctx, "repub", [{ name: `repub-${ctx.run}` }]);
      const orders = ids("r", 10).map((orderId) => ({ orderId, attributes: { keyBy: "order" } }));
      const published = [
        ...(await publishOrders(topic, "republished", orders)),
        ...(await publishOrders(topic, "republished", orders)),
      ];
      return { published, subscriptions: [`repub-${ctx.run}`] };
    },
    check(f) {
      expectEqual(f, "body runs", f.bodyRuns, f.messages / 2);
      expectEqual(f, "duplicates skipped", f.duplicatesSkipped, f.messages / 2);
    },
  },
  {
    name: "po-updates",
    claim:
      "distinct status updates of one PO (mutex on the PO inside the messageId lock) all apply, once each, never overlapping",
    async publish(ctx) {
      const topic = await pushTopic(ctx, "po", [{ name: `po-${ctx.run}` }]);
      const orders = ["PO-1", "PO-2", "PO-3"].flatMap((po) =>
        Array.from({ length: 6 }, (_, i) => ({
          orderId: `${po}/status-${i + 1}`,
          attributes: { po },
          behaviour: { holdMs: 80 },
        })),
      );
      const published = await publishOrders(topic, "po-updates", orders);
      return { published, subscriptions: [`po-${ctx.run}`] };
    },
    check(f, _records, ctx) {
      const overlaps = [...ctx.supplier.overlaps.entries()].filter(([po]) => po.startsWith("PO-"));
      f.notes.overlaps = Object.fromEntries(overlaps);
      expectEqual(
        f,
        "overlapping supplier calls for one PO",
        overlaps.reduce((n, [, v]) => n + v, 0),
        0,
      );
      expectEqual(f, "supplier re-sends", f.supplierResendsDeduplicated, 0);
    },
  },
  {
    name: "poison",
    claim: `a poison message is nacked until the dead-letter topic receives it (${DEAD_LETTER_ATTEMPTS} attempts); its neighbours are processed once`,
    async publish(ctx) {
      const [dlq] = await ctx.pubsub.createTopic(`dead-${ctx.run}`);
      const [dlqPull] = await dlq.createSubscription(`dead-pull-${ctx.run}`);
      ctx.closers.push(() => dlqPull.close());
      dlqPull.on("message", (m) => {
        ctx.deadLettered.set(m.attributes.orderId ?? "", {
          deliveryCount: m.attributes.CloudPubSubDeadLetterSourceDeliveryCount ?? "",
          subscription: m.attributes.CloudPubSubDeadLetterSourceSubscription ?? "",
        });
        m.ack();
      });
      const topic = await pushTopic(ctx, "poison", [
        { name: `poison-${ctx.run}`, deadLetterTopic: dlq.name },
      ]);
      const published = await publishOrders(topic, "poison", [
        { orderId: "p-poison", attributes: { poison: "1" } },
        ...ids("p", 5).map((orderId) => ({ orderId })),
      ]);
      return { published, subscriptions: [`poison-${ctx.run}`] };
    },
    check(f, records, ctx) {
      const dead = ctx.deadLettered.get("p-poison");
      if (!dead) f.violations.push("the poison message never reached the dead-letter topic");
      f.notes.deadLetter = dead ?? null;
      const poisonId = records.published.find((p) => p.poison)?.messageId;
      const poisonPushes = records.deliveries.filter((d) => d.messageId === poisonId).length;
      f.notes.poisonPushes = poisonPushes;
      expectEqual(f, "poison pushes", poisonPushes, DEAD_LETTER_ATTEMPTS);
      expectEqual(f, "body runs", f.bodyRuns, DEAD_LETTER_ATTEMPTS + 5);
      if (ctx.supplier.arrivals.has("poison/p-poison"))
        f.violations.push("the poison message reached the supplier");
    },
  },
];

export interface StormOptions {
  readonly orders: number;
  /** The chance a body kills its worker between its send and its complete. */
  readonly crashChance?: number;
}

/** The same shuffle for every scenario that publishes copies: seeded by the harness. */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copies = [...items];
  for (let i = copies.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copies[i], copies[j]] = [copies[j] as T, copies[i] as T];
  }
  return copies;
}

/** Crash storm: every order published twice, shuffled; crashable bodies; workers killed. */
export function crashStorm(options: StormOptions): Scenario {
  return {
    name: "crash-storm",
    claim: `${options.orders} orders, each published twice, workers SIGKILLed at random (also between the supplier call and complete) and restarted: each order's body ran to completion once, and every send beyond an order's first followed a worker that died between its send and its complete`,
    async publish(ctx) {
      const topic = await pushTopic(ctx, "storm", [{ name: `storm-${ctx.run}` }]);
      const orders: Order[] = ids("s", options.orders).map((orderId) => ({
        orderId,
        attributes: { keyBy: "order", crashable: "1" },
        behaviour: { holdMs: Math.floor(ctx.random() * 20) },
      }));
      const copies = shuffled([...orders, ...orders], ctx.random);
      const published = await publishOrders(topic, "crash-storm", copies);
      return { published, subscriptions: [`storm-${ctx.run}`] };
    },
    check(f) {
      // The ledger (shared by every scenario) already failed any double it could not pin on
      // a crash. What is left is whether this run met the window the storm exists for: a
      // holder dead between its send and its complete whose order a reclaim then re-sent.
      if ((options.crashChance ?? 0) > 0)
        expectAtLeast(
          f,
          "orders re-sent after their holder died between send and complete",
          f.resentAfterCrash,
          1,
        );
    },
  };
}

/**
 * The transactional sink (issue 16), run beside the crash storm so the harness's SIGKILLs hit
 * it too: each order is one plain INSERT into a PostgreSQL table with no unique constraint,
 * inside `lockInTransaction` (the surfaces' `transaction: true`), with no Idempotency-Key
 * anywhere. Every order is published twice (a new messageId, the same business key), a
 * quarter of the copies are pushed to two instances at once, and a crashable body may kill
 * its worker after the INSERT and before the commit.
 */
export function transactionSink(options: StormOptions): Scenario {
  return {
    name: "transaction-sink",
    claim: `${options.orders} orders, each published twice, some pushed to two instances at once, written by plain INSERTs in the transaction that commits DONE (PostgreSQL, no unique constraint), workers SIGKILLed, also between the INSERT and the commit: each order in the table exactly once`,
    async publish(ctx) {
      const topic = await pushTopic(ctx, "txn", [{ name: `txn-${ctx.run}` }]);
      const orders: Order[] = ids("x", options.orders).map((orderId, i) => ({
        orderId,
        attributes: {
          keyBy: "order",
          crashable: "1",
          ...(i % 4 === 0 ? { fanout: "2" } : {}),
        },
      }));
      const published = await publishOrders(
        topic,
        "transaction-sink",
        shuffled([...orders, ...orders], ctx.random),
      );
      return { published, subscriptions: [`txn-${ctx.run}`] };
    },
    sink: (ctx) => ctx.database.tally(),
    check(f, records) {
      expectAtLeast(
        f,
        "copies skipped or refused",
        f.duplicatesSkipped + f.contentionNacks,
        f.messages / 2,
      );
      f.notes.fannedOutPushes = records.deliveries.filter((d) => !d.answered).length;
    },
  };
}
