import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, type TestContext } from "vitest";

import {
  createHandler as createFunction,
  handleOrder,
} from "../../examples/cloud_function_datastore.js";
import { createApp, type Order } from "../../examples/cloud_run_worker.js";
import { createHandler as createPoHandler, memoryStore } from "../../examples/mutex_po_updates.js";
import {
  createListener,
  LEASE_MS,
  LONGEST_RUN_MS,
  MAX_MESSAGES,
} from "../../examples/pull_worker.js";
import { RedisLock } from "../../src/backends/redis/index.js";
import { flowControlRule } from "../../src/cli/doctor-flow-control.js";
import { InMemoryLock, InProgress, type LockBackend } from "../../src/index.js";
import {
  type FakeMessage,
  fakeMessage,
  pushBody,
  simulatePushDeliveries,
  structuredCloudEvent,
} from "../../src/testing/index.js";
import { findOrStartRedis } from "../support/redis.js";
import { startOrSkip } from "../support/required.js";

const redisServer = await startOrSkip("Redis", findOrStartRedis);
const client = redisServer ? new Redis(redisServer.url) : undefined;
afterAll(async () => {
  client?.disconnect();
  await redisServer?.stop();
});

/** Every backend the examples are exercised on: memory always, Redis when reachable. */
const backends: [string, () => LockBackend | undefined][] = [
  ["memory", () => new InMemoryLock()],
  [
    "redis",
    () =>
      client
        ? new RedisLock({ client, prefix: `examples:${Date.now()}:${Math.random()}:` })
        : undefined,
  ],
];

describe.each(backends)("examples on %s", (name, make) => {
  const backendOrSkip = (ctx: TestContext): LockBackend => {
    const backend = make();
    if (!backend) ctx.skip(`${name} cannot start`);
    return backend;
  };

  it("cloud_run_worker: a storm of push deliveries fulfils each order once", async (ctx) => {
    const backend = backendOrSkip(ctx);
    const fulfilled: string[] = [];
    const app = createApp(backend, async (order: Order, key) => {
      expect(key).toBe(`order:${order.orderId}`);
      fulfilled.push(order.orderId);
    });
    const server = createServer(app);
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pubsub/push`;
    try {
      const orders = ["a", "b", "c", "d"];
      // "b" is also republished under a new messageId: the business key catches it.
      const messages = [...orders, "b"].map((orderId) =>
        pushBody({ orderId }, { attributes: { orderId } }),
      );
      const report = await simulatePushDeliveries({ url, messages, copies: 3, concurrency: 2 });
      expect(report.unacked).toEqual([]);
      expect(fulfilled.sort()).toEqual(orders);
      // A message without the attribute is refused, not run unguarded.
      const bare = await simulatePushDeliveries({
        url,
        messages: [pushBody({ orderId: "z" })],
        copies: 1,
        maxRedeliveries: 0,
      });
      expect(bare.statusCounts).toEqual({ 400: 1 });
    } finally {
      await new Promise<void>((done) => server.close(() => done()));
    }
  });

  it("cloud_function_datastore: a redelivered CloudEvent runs once, a concurrent one nacks", async (ctx) => {
    const backend = backendOrSkip(ctx);
    const sent: string[] = [];
    let releaseFirst = () => {};
    const gate = new Promise<void>((done) => {
      releaseFirst = done;
    });
    const handler = createFunction(backend, async (order, key) => {
      sent.push(`${order.orderId}@${key}`);
      await gate;
    });
    const event = structuredCloudEvent({ orderId: "o-1" }, { messageId: "m-1" });
    const first = handler(event);
    // While the first holds the key, a concurrent copy rejects (a 500 nack in the framework).
    await expect(handler(event)).rejects.toBeInstanceOf(InProgress);
    releaseFirst();
    await first;
    await handler(event); // redelivery after success: resolves (ack), body skipped
    expect(sent).toEqual(["o-1@order:m-1"]);
    expect(typeof handleOrder).toBe("function");
  });

  it("pull_worker: acks once-run messages and duplicates, nacks a failure", async (ctx) => {
    const backend = backendOrSkip(ctx);
    const seen: unknown[] = [];
    const listener = createListener<FakeMessage>(backend, async (payload) => {
      if ((payload as { poison?: boolean }).poison) throw new Error("cannot process");
      seen.push(payload);
    });
    const message = fakeMessage({ n: 1 }, { messageId: `p-${Math.random()}` });
    await Promise.all([listener(message), listener(message)]);
    await listener(message);
    expect(message.settlements).toEqual(["ack", "ack", "ack"]);
    expect(seen).toEqual([{ n: 1 }]);
    const poison = fakeMessage({ poison: true });
    await listener(poison);
    expect(poison.settlements).toEqual(["nack"]);
  });

  it("pull_worker: its flowControl passes doctor's rule (maxMessages × the longest run fits the lease)", () => {
    const sizing = {
      leaseMs: LEASE_MS,
      heartbeat: false,
      maxHoldMs: 3_600_000,
      maxRunMs: LONGEST_RUN_MS,
      maxExtensionMs: 3_600_000,
    };
    const pull = { ackDeadlineSeconds: 10, pushEndpoint: undefined };
    expect(flowControlRule(pull, { ...sizing, maxMessages: MAX_MESSAGES }).verdict).toBe("pass");
    // The client's default of 1,000 would not: the example has to set it.
    expect(flowControlRule(pull, { ...sizing, maxMessages: 1_000 }).verdict).toBe("fail");
  });

  it("mutex_po_updates: every distinct update applied once, never interleaved", async (ctx) => {
    const backend = backendOrSkip(ctx);
    const store = memoryStore();
    const poId = `po-${Math.random()}`;
    const updates = Array.from({ length: 8 }, (_, seq) =>
      pushBody({ poId, status: `s${seq}`, seq }),
    );
    const report = await simulatePushDeliveries({
      handler: createPoHandler(backend, store),
      messages: updates,
      copies: 2,
      concurrency: 2,
      maxRedeliveries: 10,
      backoffMs: 20,
    });
    expect(report.unacked).toEqual([]);
    // A lost update (interleaved read-modify-write) or a duplicate would change this list.
    const history = store.data.get(poId) ?? [];
    expect([...history].sort()).toEqual(updates.map((_, seq) => `${seq}:s${seq}`).sort());
  });
});
