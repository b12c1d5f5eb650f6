// The pull surface on the Pub/Sub emulator: a subscription with exactly-once delivery (the
// emulator honours it: an ack with a stale ack id is refused with INVALID, and the message is
// redelivered), and a subscription with message ordering.
//
// An ack is made stale the way Pub/Sub makes it so: the message's ack id is expired (a
// ModifyAckDeadline of 0 through the admin client, as a lease that lapsed would) while its
// first delivery runs, so Pub/Sub redelivers it under a new ack id.
import { type Message, PubSub, type Subscription, v1 } from "@google-cloud/pubsub";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { mutex } from "../../src/core/verbs/lock.js";
import { idempotentMessage } from "../../src/surfaces/index.js";
import { type Emulator, PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";
import { telemetryHarness } from "../support/telemetry.js";
import { captureLogger } from "./helpers.js";

const unhandled: unknown[] = [];
process.on("unhandledRejection", (reason) => unhandled.push(reason));
afterEach(() => {
  expect(unhandled).toEqual([]);
});

async function until(check: () => boolean, ms: number, what: string) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const emulator: Emulator | undefined = await emulatorOrSkip("pubsub");

describe.skipIf(emulator === undefined)("pull on the Pub/Sub emulator", () => {
  let pubsub: PubSub;
  let admin: v1.SubscriberClient;
  const run = `p${Date.now().toString(36)}`;
  let made = 0;

  beforeAll(() => {
    pubsub = new PubSub({
      projectId: PROJECT,
      apiEndpoint: emulator?.host ?? "",
      emulatorMode: true,
    });
    // The client's own options name the emulator (host, port, insecure credentials).
    admin = new v1.SubscriberClient(
      pubsub.options as ConstructorParameters<typeof v1.SubscriberClient>[0],
    );
  });

  afterAll(async () => {
    await admin?.close();
    await pubsub?.close();
    await emulator?.stop();
  });

  /** A topic and a subscription of its own for each test (message ids restart per emulator). */
  async function subscribe(options: { exactlyOnce?: boolean; ordering?: boolean }): Promise<{
    subscription: Subscription;
    publish: (data: string, extra?: object) => Promise<string>;
  }> {
    made += 1;
    const name = `${run}-${made}`;
    const [topic] = await pubsub.createTopic(name);
    const [subscription] = await topic.createSubscription(`${name}-sub`, {
      enableExactlyOnceDelivery: options.exactlyOnce ?? false,
      enableMessageOrdering: options.ordering ?? false,
      retryPolicy: { minimumBackoff: { seconds: 1 }, maximumBackoff: { seconds: 2 } },
    });
    const publisher = pubsub.topic(name, { messageOrdering: options.ordering ?? false });
    return {
      subscription,
      publish: (data, extra = {}) =>
        publisher.publishMessage({ data: Buffer.from(data), ...extra }),
    };
  }

  /** Expire the message's ack id, as a lapsed lease does: Pub/Sub redelivers it under a new one. */
  async function expireAckId(subscription: Subscription, message: Message): Promise<void> {
    await admin.modifyAckDeadline({
      subscription: subscription.name,
      ackIds: [message.ackId],
      ackDeadlineSeconds: 0,
    });
  }

  /** What `ackWithResponse()` answered, per message id, in order. */
  function recordAnswers(answers: string[]) {
    return (message: Message): Message => {
      const ackWithResponse = message.ackWithResponse.bind(message);
      message.ackWithResponse = async () => {
        try {
          const answer = await ackWithResponse();
          answers.push(answer);
          return answer;
        } catch (error) {
          answers.push(`rejected ${(error as { errorCode?: string }).errorCode}`);
          throw error;
        }
      };
      return message;
    };
  }

  describe("a subscription with exactly-once delivery", () => {
    it("a refused ack is ack_failed with its code, on its line and its span; the redelivery is a duplicate", async () => {
      const { subscription, publish } = await subscribe({ exactlyOnce: true });
      const [metadata] = await subscription.getMetadata();
      expect(metadata.enableExactlyOnceDelivery).toBe(true);
      const otel = telemetryHarness();
      const logger = captureLogger();
      let runs = 0;
      const onMessage = idempotentMessage<Message>(
        {
          backend: new InMemoryLock(),
          logger,
          telemetry: { tracerProvider: otel.tracerProvider, meterProvider: otel.meterProvider },
        },
        async (m) => {
          runs += 1;
          await expireAckId(subscription, m);
        },
      );
      const answers: string[] = [];
      const record = recordAnswers(answers);
      const listener = (m: Message) => void onMessage(record(m));
      subscription.on("message", listener);
      try {
        const id = await publish("order-1");
        // Done when a later delivery's ack is taken (Pub/Sub delivers the message no more) and
        // the first one's answered; the two may share a batch, so either may come first.
        await until(() => answers.length === 2, 20_000, "both acks answered");
        expect(runs).toBe(1);
        expect([...answers].sort()).toEqual(["SUCCESS", "rejected INVALID"]);
        const failed = logger.lines.filter((l) => l.fields.outcome === "ack_failed");
        expect(failed).toHaveLength(1);
        expect(failed[0]?.severity).toBe("WARNING");
        expect(failed[0]?.fields).toMatchObject({ key: id, messageId: id, ackError: "INVALID" });
        expect(failed[0]?.message).toContain("skipped as a duplicate");
        expect(logger.lines.some((l) => l.fields.outcome === "duplicate")).toBe(true);
        const deliveries = otel.spans().filter((s) => s.name.startsWith("process"));
        const refused = deliveries.filter(
          (s) => s.attributes["idempotency.outcome"] === "ack_failed",
        );
        expect(refused).toHaveLength(1);
        expect(refused[0]?.status.code).toBe(2); // ERROR
        expect(deliveries.map((s) => s.attributes["idempotency.outcome"])).toContain("duplicate");
        expect(await otel.outcomes()).toMatchObject({ "ack_failed|InMemoryLock|lock": 1 });
      } finally {
        subscription.removeListener("message", listener);
        await subscription.close();
      }
    });

    it("control: with exactlyOnce: false the same refused ack goes unseen", async () => {
      const { subscription, publish } = await subscribe({ exactlyOnce: true });
      const logger = captureLogger();
      let runs = 0;
      const onMessage = idempotentMessage<Message>(
        { backend: new InMemoryLock(), logger, exactlyOnce: false },
        async (m) => {
          runs += 1;
          await expireAckId(subscription, m);
        },
      );
      let duplicateAcked = false;
      const listener = (m: Message) => {
        const ack = m.ack.bind(m);
        m.ack = () => {
          if (logger.lines.some((l) => l.fields.outcome === "duplicate")) duplicateAcked = true;
          ack();
        };
        void onMessage(m);
      };
      subscription.on("message", listener);
      try {
        await publish("order-1");
        await until(() => duplicateAcked, 20_000, "the duplicate acked");
        expect(runs).toBe(1);
        // ack() answers nothing: the first delivery's refused ack left no trace.
        expect(logger.lines.filter((l) => l.fields.outcome === "ack_failed")).toEqual([]);
      } finally {
        subscription.removeListener("message", listener);
        await subscription.close();
      }
    });

    it("a refused nack is logged with its code; the message still comes back and runs", async () => {
      const { subscription, publish } = await subscribe({ exactlyOnce: true });
      const logger = captureLogger();
      let runs = 0;
      const onMessage = idempotentMessage<Message>(
        { backend: new InMemoryLock(), logger },
        async (m) => {
          runs += 1;
          if (runs === 1) {
            await expireAckId(subscription, m);
            throw new Error("transient");
          }
        },
      );
      const answers: string[] = [];
      const record = recordAnswers(answers);
      const listener = (m: Message) => void onMessage(record(m));
      subscription.on("message", listener);
      try {
        const id = await publish("order-2");
        const refused = () =>
          logger.lines.filter((l) => l.message.startsWith("Pub/Sub refused the nack"));
        // The nack and the redelivery's ack go in separate batches: wait for both answers.
        await until(
          () => answers.includes("SUCCESS") && refused().length > 0,
          20_000,
          "the refused nack and an ack Pub/Sub took",
        );
        expect(runs).toBe(2);
        expect(refused()).toHaveLength(1);
        expect(refused()[0]?.fields).toMatchObject({
          messageId: id,
          outcome: "settle_failed",
          ackError: "INVALID",
        });
        expect(logger.lines.filter((l) => l.fields.outcome === "ack_failed")).toEqual([]);
      } finally {
        subscription.removeListener("message", listener);
        await subscription.close();
      }
    });
  });

  describe("a subscription with message ordering", () => {
    /**
     * One order's status updates, as the pull guide shows them: each carries its sequence
     * number, and under a mutex per ordering key an update applies only right after its
     * predecessor; an early one throws (nack) and comes back.
     */
    function statusWorker(options: { checkSequence: boolean; failOnce: number; replay: number }) {
      const backend = new InMemoryLock();
      const logger = captureLogger();
      const effects: number[] = [];
      const duplicates: string[] = [];
      let applied = 0;
      let failuresLeft = 1;
      let replaysLeft = 1;
      let subscription: Subscription | undefined;
      const onMessage = idempotentMessage<Message>(
        { backend, logger, onDuplicate: (key) => void duplicates.push(key) },
        async (m) => {
          const seq = Number(m.attributes.seq);
          // Pub/Sub replays a key's messages after a nack, acked ones included; the emulator
          // does not, so this update hands itself back once after it is applied.
          const replay = seq === options.replay && replaysLeft-- > 0;
          const apply = () => {
            if (options.checkSequence) {
              if (seq <= applied) return;
              if (seq !== applied + 1) {
                throw new Error(`update ${seq} arrived before update ${applied + 1}`);
              }
            }
            if (seq === options.failOnce && failuresLeft-- > 0) throw new Error("transient");
            effects.push(seq);
            applied = seq;
          };
          if (options.checkSequence) {
            await mutex(`status:${m.orderingKey}`, { backend, logger, waitMs: 10_000 }, apply);
          } else {
            apply();
          }
          if (replay && subscription) await expireAckId(subscription, m);
        },
      );
      return {
        logger,
        effects,
        duplicates,
        listen(on: Subscription) {
          subscription = on;
          const listener = (m: Message) => void onMessage(m);
          on.on("message", listener);
          return listener;
        },
      };
    }

    async function publishSequence(publish: (data: string, extra?: object) => Promise<string>) {
      const ids: string[] = [];
      for (let seq = 1; seq <= 6; seq++) {
        ids.push(
          await publish(`status ${seq}`, {
            orderingKey: "order-1",
            attributes: { seq: String(seq) },
          }),
        );
      }
      return ids;
    }

    it("a failure mid-sequence: effects stay in order with a mutex per ordering key, a replayed update is a duplicate", async () => {
      const { subscription, publish } = await subscribe({ ordering: true });
      const ids = await publishSequence(publish);
      const worker = statusWorker({ checkSequence: true, failOnce: 3, replay: 2 });
      const listener = worker.listen(subscription);
      try {
        await until(
          () => worker.effects.length === 6 && worker.duplicates.length > 0,
          20_000,
          "every update applied and the replay skipped",
        );
        expect(worker.effects).toEqual([1, 2, 3, 4, 5, 6]);
        // The applied update that came back ran no second time: its DONE record skipped it.
        expect(worker.duplicates).toEqual([ids[1]]);
        const reasons = worker.logger.at("ERROR").map((l) => l.fields.reason);
        expect(reasons).toContain("Error: transient");
      } finally {
        subscription.removeListener("message", listener);
        await subscription.close();
      }
    });

    it("control: without the sequence check the Node client runs later updates before the failed one comes back", async () => {
      const { subscription, publish } = await subscribe({ ordering: true });
      await publishSequence(publish);
      const worker = statusWorker({ checkSequence: false, failOnce: 3, replay: 0 });
      const listener = worker.listen(subscription);
      try {
        await until(() => worker.effects.length === 6, 20_000, "every update applied");
        // @google-cloud/pubsub hands every message of a key to the listener at once.
        expect(worker.effects).not.toEqual([1, 2, 3, 4, 5, 6]);
        expect([...worker.effects].sort()).toEqual([1, 2, 3, 4, 5, 6]);
      } finally {
        subscription.removeListener("message", listener);
        await subscription.close();
      }
    });
  });
});
