import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { type Message, PubSub } from "@google-cloud/pubsub";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { idempotentHttp, idempotentMessage } from "../../src/surfaces/index.js";
import { type Emulator, PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";
import { captureLogger, listen } from "./helpers.js";

async function until(check: () => boolean | Promise<boolean>, ms: number, what: string) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const ok = (status: number) => status >= 200 && status < 300;

/** A push endpoint that notes each answer's status once it is sent. */
function answered(
  fn: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  statuses: number[],
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    res.once("finish", () => statuses.push(res.statusCode));
    void fn(req, res);
  };
}

// In CI a missing emulator is a failure, never a quiet skip (see test/support/required.ts).
const emulator: Emulator | undefined = await emulatorOrSkip("pubsub");

describe.skipIf(emulator === undefined)("against the Pub/Sub emulator", () => {
  let pubsub: PubSub;
  // Message ids restart with each emulator run: give each run its own names and backend.
  const run = `r${Date.now().toString(36)}`;

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

  it("pull: a duplicate order runs once, a failed message is redelivered and then acked", async () => {
    const [topic] = await pubsub.createTopic(`pull-${run}`);
    const [subscription] = await topic.createSubscription(`pull-${run}-sub`, {
      ackDeadlineSeconds: 10,
      retryPolicy: { minimumBackoff: { seconds: 1 }, maximumBackoff: { seconds: 2 } },
    });
    const logger = captureLogger();
    const runs: string[] = [];
    let failuresLeft = 1;
    const onMessage = idempotentMessage<Message>(
      { backend: new InMemoryLock(), logger, key: (m) => m.attributes.orderId },
      (m) => {
        const order = m.attributes.orderId ?? "";
        if (order === "flaky" && failuresLeft-- > 0) throw new Error("transient");
        runs.push(order);
      },
    );
    // Every answer the gateway gives, per message: an acked message is not delivered again,
    // so once all three are acked nothing can still come back and run.
    const acked = new Set<string>();
    const nacked: string[] = [];
    const answering = (m: Message) => {
      const [ack, nack] = [m.ack.bind(m), m.nack.bind(m)];
      m.ack = () => {
        acked.add(m.id);
        ack();
      };
      m.nack = () => {
        nacked.push(m.attributes.orderId ?? "");
        nack();
      };
      return onMessage(m);
    };
    subscription.on("message", answering);
    try {
      await topic.publishMessage({ data: Buffer.from("a"), attributes: { orderId: "o-1" } });
      await topic.publishMessage({ data: Buffer.from("a"), attributes: { orderId: "o-1" } });
      await topic.publishMessage({ data: Buffer.from("b"), attributes: { orderId: "flaky" } });
      await until(() => acked.size === 3, 20_000, "all three messages acked");
      expect(runs.sort()).toEqual(["flaky", "o-1"]);
      // The failure was nacked (a duplicate meeting the live first delivery may be too).
      expect(nacked).toContain("flaky");
      expect(logger.at("ERROR").map((l) => l.fields.reason)).toEqual(["Error: transient"]);
    } finally {
      subscription.removeListener("message", answering);
      await subscription.close();
    }
  });

  it("push: the emulator's push envelope is parsed and a failure is retried", async () => {
    const logger = captureLogger();
    const seen: { id: string; text: string; subscription: string | undefined }[] = [];
    let failuresLeft = 1;
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger }, (m) => {
      if (failuresLeft-- > 0) throw new Error("transient");
      seen.push({ id: m.messageId, text: m.text(), subscription: m.subscription });
    });
    const statuses: number[] = [];
    const server = await listen(createHttpServer(answered(fn, statuses)));
    try {
      const [topic] = await pubsub.createTopic(`push-${run}`);
      await topic.createSubscription(`push-${run}-sub`, {
        pushConfig: { pushEndpoint: server.url },
        retryPolicy: { minimumBackoff: { seconds: 1 }, maximumBackoff: { seconds: 2 } },
      });
      const id = await topic.publishMessage({ json: { hello: "push" } });
      // A 2xx answer is an ack: the emulator pushes that message no more.
      await until(() => statuses.some(ok), 20_000, "the push delivery acked");
      expect(statuses).toEqual([500, 204]);
      expect(seen).toEqual([
        {
          id,
          text: '{"hello":"push"}',
          subscription: `projects/${PROJECT}/subscriptions/push-${run}-sub`,
        },
      ]);
      // The first delivery got a 500; the emulator redelivered it and the second one ran.
      expect(logger.at("ERROR").map((l) => l.fields.reason)).toEqual(["Error: transient"]);
    } finally {
      await server.close();
    }
  });

  it("unwrapped push with metadata: keyed by the header, not by a message in the payload", async () => {
    const logger = captureLogger();
    const seen: Record<string, unknown>[] = [];
    let failuresLeft = 1;
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger }, (m, req) => {
      if (failuresLeft-- > 0) throw new Error("transient");
      // The attributes come as headers of their own names, lower-cased: the gateway reads
      // them back into message.attributes, and nothing the transport adds among them.
      seen.push({
        id: m.messageId,
        text: m.text(),
        attributes: m.attributes,
        orderId: req.headers?.orderid,
        subscription: m.subscription,
        orderingKey: m.orderingKey,
      });
    });
    const statuses: number[] = [];
    const server = await listen(createHttpServer(answered(fn, statuses)));
    try {
      const [topic] = await pubsub.createTopic(`unwrapped-${run}`);
      await topic.createSubscription(`unwrapped-${run}-sub`, {
        pushConfig: { pushEndpoint: server.url, noWrapper: { writeMetadata: true } },
        enableMessageOrdering: true,
        retryPolicy: { minimumBackoff: { seconds: 1 }, maximumBackoff: { seconds: 2 } },
      });
      const payload = '{"message":{"messageId":"from-the-payload","data":""}}';
      const id = await topic.publishMessage({
        data: Buffer.from(payload),
        attributes: { orderId: "o-7" },
        orderingKey: "customer-1",
      });
      await until(() => statuses.some(ok), 20_000, "the unwrapped push acked");
      expect(statuses).toEqual([500, 204]);
      // The emulator writes the ordering key as x-goog-ordering-key, not the documented
      // x-goog-pubsub-ordering-key; both are read.
      expect(seen).toEqual([
        {
          id,
          text: payload,
          attributes: { orderid: "o-7" },
          orderId: "o-7",
          subscription: `projects/${PROJECT}/subscriptions/unwrapped-${run}-sub`,
          orderingKey: "customer-1",
        },
      ]);
      expect(logger.at("ERROR").map((l) => l.fields.reason)).toEqual(["Error: transient"]);
    } finally {
      await server.close();
    }
  });

  it("unwrapped push without metadata: no messageId, so a key option keys it", async () => {
    const runs: string[] = [];
    const duplicates: string[] = [];
    const fn = idempotentHttp(
      {
        backend: new InMemoryLock(),
        logger: captureLogger(),
        key: ({ message }) => `order:${message.json<{ orderId: string }>().orderId}`,
        onDuplicate: (key) => void duplicates.push(key),
      },
      (m) => {
        expect(m.messageId).toBe("");
        runs.push(m.json<{ orderId: string }>().orderId);
      },
    );
    const statuses: number[] = [];
    const server = await listen(createHttpServer(answered(fn, statuses)));
    try {
      const [topic] = await pubsub.createTopic(`bare-${run}`);
      await topic.createSubscription(`bare-${run}-sub`, {
        pushConfig: { pushEndpoint: server.url, noWrapper: { writeMetadata: false } },
        retryPolicy: { minimumBackoff: { seconds: 1 }, maximumBackoff: { seconds: 2 } },
      });
      // The same order published twice: two messages, one run.
      await topic.publishMessage({ json: { orderId: "o-8" } });
      await topic.publishMessage({ json: { orderId: "o-8" } });
      await until(() => statuses.filter(ok).length >= 2, 20_000, "both unwrapped pushes acked");
      expect(runs).toEqual(["o-8"]);
      expect(duplicates).toEqual(["order:o-8"]);
    } finally {
      await server.close();
    }
  });
});
