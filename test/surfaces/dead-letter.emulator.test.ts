// deadLetter against a real dead-letter policy on the Pub/Sub emulator. What the emulator does
// (gcloud 528+): on pull it sends deliveryAttempt (1, 2, …) and dead-letters after
// maxDeliveryAttempts, with the CloudPubSubDeadLetterSource* attributes; on push it dead-letters
// the same way but sends no deliveryAttempt, so deadLetter cannot act there (docs/pull.md).
import { createServer } from "node:http";
import { type Message, PubSub, type Subscription } from "@google-cloud/pubsub";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExhaustedReason, idempotentHttp, idempotentMessage, lock } from "../../src/index.js";
import { type Emulator, PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";
import { captureLogger, gate, listen, watchedLock } from "./helpers.js";

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const emulator: Emulator | undefined = await emulatorOrSkip("pubsub");

// Each case on topics of its own: they run side by side, as the emulator's redeliveries are slow.
describe.skipIf(emulator === undefined).concurrent("deadLetter on the Pub/Sub emulator", () => {
  let pubsub: PubSub;
  const run = `dl${Date.now().toString(36)}`;
  let made = 0;

  beforeAll(() => {
    pubsub = new PubSub({
      projectId: PROJECT,
      apiEndpoint: emulator?.host ?? "",
      emulatorMode: true,
    });
  });
  afterAll(async () => {
    await pubsub?.close();
    await emulator?.stop();
  });

  /** A topic with a subscription dead-lettering after 5 attempts, and one on its dead-letter topic. */
  async function withDeadLetterPolicy(push?: string) {
    const name = `${run}-${++made}`;
    const [dead] = await pubsub.createTopic(`${name}-dead`);
    const [deadSub] = await dead.createSubscription(`${name}-dead-sub`);
    const [topic] = await pubsub.createTopic(name);
    const [subscription] = await topic.createSubscription(`${name}-sub`, {
      ...(push === undefined ? {} : { pushConfig: { pushEndpoint: push } }),
      ackDeadlineSeconds: 10,
      retryPolicy: { minimumBackoff: { seconds: 0, nanos: 100e6 }, maximumBackoff: { seconds: 1 } },
      deadLetterPolicy: { deadLetterTopic: dead.name, maxDeliveryAttempts: 5 },
    });
    const deadLettered: Message[] = [];
    deadSub.on("message", (m: Message) => {
      deadLettered.push(m);
      m.ack();
    });
    return { topic, subscription, deadSub, deadLettered };
  }

  /** Every settlement of the listener's messages: [attempt, "ack" | "nack"]. */
  function settling(
    subscription: Subscription,
    listener: (m: Message) => Promise<void>,
  ): [number, string][] {
    const settled: [number, string][] = [];
    subscription.on("message", (m: Message) => {
      const [ack, nack] = [m.ack.bind(m), m.nack.bind(m)];
      m.ack = () => {
        settled.push([m.deliveryAttempt, "ack"]);
        ack();
      };
      m.nack = () => {
        settled.push([m.deliveryAttempt, "nack"]);
        nack();
      };
      void listener(m);
    });
    return settled;
  }

  async function closeAll(...subscriptions: Subscription[]) {
    for (const s of subscriptions) await s.close();
  }

  it("pull: contention alone does not dead-letter; without deadLetter it does (control)", async () => {
    const attempt = async (deadLetter: { maxDeliveryAttempts: number } | undefined) => {
      const { topic, subscription, deadSub, deadLettered } = await withDeadLetterPolicy();
      const hold = gate();
      // Another worker holds the order while its own delivery runs: contention for every copy.
      // With deadLetter the copy on attempt 4 waits (its second held answer): the holder ends.
      const backend = watchedLock((n) => deadLetter !== undefined && n === 5 && hold.open());
      let started = false;
      const holder = lock(`order:o-1`, { backend }, async () => {
        started = true;
        await hold.promise;
      });
      await until(() => started, 5_000, "the holder");
      const runs: string[] = [];
      const settled = settling(
        subscription,
        idempotentMessage<Message>(
          {
            backend,
            logger: captureLogger(),
            key: (m) => `order:${m.attributes.orderId}`,
            deadLetter,
          },
          (m) => void runs.push(m.id),
        ),
      );
      try {
        await topic.publishMessage({ data: Buffer.from("x"), attributes: { orderId: "o-1" } });
        return await finish(deadLetter !== undefined, settled, deadLettered, hold, holder, runs);
      } finally {
        await closeAll(subscription, deadSub);
      }
    };
    const [aware, control] = await Promise.all([
      attempt({ maxDeliveryAttempts: 5 }),
      attempt(undefined),
    ]);
    expect(aware.settled).toEqual([
      [1, "nack"],
      [2, "nack"],
      [3, "nack"],
      [4, "ack"],
    ]);
    expect(aware.runs).toEqual([]); // a duplicate of the holder's run
    expect(control.settled).toEqual([
      [1, "nack"],
      [2, "nack"],
      [3, "nack"],
      [4, "nack"],
      [5, "nack"],
    ]);
    expect(control.deadLettered).toEqual([["o-1", "5"]]);
  }, 60_000);

  async function finish(
    aware: boolean,
    settled: [number, string][],
    deadLettered: Message[],
    hold: { open: () => void },
    holder: Promise<unknown>,
    runs: string[],
  ) {
    if (aware) await until(() => settled.some(([, s]) => s === "ack"), 30_000, "the ack");
    else await until(() => deadLettered.length > 0, 30_000, "the dead-lettered message");
    hold.open();
    await holder;
    return {
      settled: [...settled],
      runs,
      deadLettered: deadLettered.map((m) => [
        m.attributes.orderId,
        m.attributes.CloudPubSubDeadLetterSourceDeliveryCount,
      ]),
    };
  }

  it("pull: onExhausted sees the poison message's last delivery, which the policy dead-letters", async () => {
    const { topic, subscription, deadSub, deadLettered } = await withDeadLetterPolicy();
    const exhausted: ExhaustedReason[] = [];
    const settled = settling(
      subscription,
      idempotentMessage<Message>(
        {
          backend: watchedLock(),
          logger: captureLogger(),
          deadLetter: { maxDeliveryAttempts: 5, onExhausted: (_m, r) => void exhausted.push(r) },
        },
        () => {
          throw new Error("poison");
        },
      ),
    );
    try {
      await topic.publishMessage({ data: Buffer.from("p") });
      await until(() => deadLettered.length > 0, 30_000, "the dead-lettered message");
      expect(settled.map(([a]) => a)).toEqual([1, 2, 3, 4, 5]);
      expect(exhausted.map((r) => [r.outcome, r.deliveryAttempt, r.error?.message])).toEqual([
        ["failed", 5, "poison"],
      ]);
      expect(deadLettered[0]?.attributes.CloudPubSubDeadLetterSourceDeliveryCount).toBe("5");
    } finally {
      await closeAll(subscription, deadSub);
    }
  }, 60_000);

  it("push: the emulator sends no deliveryAttempt, so deadLetter says once it cannot act", async () => {
    const logger = captureLogger();
    const hooked: unknown[] = [];
    const handler = idempotentHttp(
      {
        backend: watchedLock(),
        logger,
        deadLetter: { maxDeliveryAttempts: 5, onExhausted: (p) => void hooked.push(p) },
      },
      () => {
        throw new Error("poison");
      },
    );
    const server = await listen(createServer((req, res) => void handler(req, res)));
    const { topic, subscription, deadSub, deadLettered } = await withDeadLetterPolicy(server.url);
    try {
      await topic.publishMessage({ data: Buffer.from("p") });
      await until(() => deadLettered.length > 0, 30_000, "the dead-lettered push");
      expect(logger.lines.filter((l) => l.fields.outcome === "failed")).toHaveLength(5);
      expect(logger.lines.filter((l) => l.fields.outcome === "dead_letter_inactive")).toHaveLength(
        1,
      );
      expect(hooked).toEqual([]);
    } finally {
      await closeAll(subscription, deadSub);
      await server.close();
    }
  }, 60_000);
});
