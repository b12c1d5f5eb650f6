// Dead-letter aware delivery (issue 31, item 3) on the three surfaces: a copy that meets a held
// key on one of its last attempts waits for the holder instead of nacking, bounded by what its
// surface can hold; onExhausted sees the delivery that will be dead-lettered, before its nack.
import { createServer } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import {
  type ExhaustedReason,
  idempotent,
  idempotentHttp,
  idempotentMessage,
} from "../../src/surfaces/index.js";
import { fakeMessage, pushBody, simulatePushDeliveries } from "../../src/testing/index.js";
import { captureLogger, gate, listen, watchedLock } from "./helpers.js";

const unhandled: unknown[] = [];
process.on("unhandledRejection", (reason) => unhandled.push(reason));
afterEach(() => {
  vi.useRealTimers();
  expect(unhandled).toEqual([]);
});

/** Resolves once `check` holds, looking after each macrotask. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setImmediate(r));
}

describe("deadLetter on the pull surface", () => {
  it("a copy on its last attempts waits for the holder and is acked as a duplicate", async () => {
    const logger = captureLogger();
    const hold = gate();
    // The copy's second held answer: it is waiting, not nacked. Now the holder finishes.
    const backend = watchedLock((n) => n === 2 && hold.open());
    let runs = 0;
    const onMessage = idempotentMessage(
      { backend, logger, deadLetter: { maxDeliveryAttempts: 10 } },
      async () => {
        runs += 1;
        await hold.promise;
      },
    );
    const first = fakeMessage("x", { messageId: "dl-1", deliveryAttempt: 1 });
    const copy = fakeMessage("x", { messageId: "dl-1", deliveryAttempt: 9 });
    const running = onMessage(first);
    await until(() => runs === 1);
    await onMessage(copy);
    await running;
    expect(copy.settlements).toEqual(["ack"]);
    expect(first.settlements).toEqual(["ack"]);
    expect(runs).toBe(1);
    expect(logger.at("ERROR")).toEqual([]);
  });

  it("control: before its last attempts, and without deadLetter, the copy is nacked at once", async () => {
    for (const [attempt, deadLetter] of [
      [8, { maxDeliveryAttempts: 10 }],
      [10, undefined],
    ] as const) {
      const hold = gate();
      const backend = watchedLock();
      let runs = 0;
      const onMessage = idempotentMessage(
        { backend, logger: captureLogger(), deadLetter },
        async () => {
          runs += 1;
          await hold.promise;
        },
      );
      const running = onMessage(fakeMessage("x", { messageId: "dl-2", deliveryAttempt: 1 }));
      await until(() => runs === 1);
      const copy = fakeMessage("x", { messageId: "dl-2", deliveryAttempt: attempt });
      await onMessage(copy);
      expect(copy.settlements).toEqual(["nack"]);
      expect(backend.held).toBe(1);
      hold.open();
      await running;
    }
  });

  it("the last attempt's wait ends at maxWaitMs; onExhausted runs once, before the nack", async () => {
    const logger = captureLogger();
    const hold = gate();
    const seen: { id: string; reason: ExhaustedReason; settledBefore: string[] }[] = [];
    const copy = fakeMessage("x", { messageId: "dl-3", deliveryAttempt: 10 });
    const onMessage = idempotentMessage(
      {
        backend: watchedLock(),
        logger,
        deadLetter: {
          maxDeliveryAttempts: 10,
          maxWaitMs: 40,
          onExhausted: (message, reason) => {
            seen.push({ id: message.id, reason, settledBefore: [...copy.settlements] });
          },
        },
      },
      () => hold.promise,
    );
    const running = onMessage(fakeMessage("x", { messageId: "dl-3", deliveryAttempt: 1 }));
    await onMessage(copy);
    expect(copy.settlements).toEqual(["nack"]);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.id).toBe("dl-3");
    expect(seen[0]?.settledBefore).toEqual([]);
    expect(seen[0]?.reason).toMatchObject({
      outcome: "held",
      key: "dl-3",
      deliveryAttempt: 10,
      maxDeliveryAttempts: 10,
      error: undefined,
    });
    const [line] = logger.at("ERROR");
    expect(line?.fields).toMatchObject({
      outcome: "exhausted",
      lastOutcome: "held",
      key: "dl-3",
      deliveryAttempt: 10,
      maxDeliveryAttempts: 10,
    });
    hold.open();
    await running;
  });

  it("the wait is bounded by the message's lease, counted from its receipt", async () => {
    const hold = gate();
    const backend = watchedLock();
    let runs = 0;
    const onMessage = idempotentMessage(
      { backend, logger: captureLogger(), deadLetter: { maxDeliveryAttempts: 5 } },
      async () => {
        runs += 1;
        await hold.promise;
      },
    );
    const running = onMessage(fakeMessage("x", { messageId: "dl-4", deliveryAttempt: 1 }));
    await until(() => runs === 1);
    // Received 60 minutes ago, less a moment: the client's lease (maxExtensionTime) is over.
    const late = {
      ...fakeMessage("x", { messageId: "dl-4", deliveryAttempt: 5 }),
      received: Date.now() - 60 * 60_000 + 200,
    };
    await onMessage(late);
    expect(late.settlements).toEqual(["nack"]);
    expect(backend.held).toBe(1);
    hold.open();
    await running;
  });

  it("onExhausted runs only on a nack at or past maxDeliveryAttempts", async () => {
    const calls: ExhaustedReason[] = [];
    let fail = true;
    const onMessage = idempotentMessage(
      {
        backend: new InMemoryLock(),
        logger: captureLogger(),
        deadLetter: { maxDeliveryAttempts: 5, onExhausted: (_m, reason) => calls.push(reason) },
      },
      () => {
        if (fail) throw new TypeError("poison");
      },
    );
    await onMessage(fakeMessage("x", { messageId: "dl-5", deliveryAttempt: 4 }));
    expect(calls).toEqual([]);
    await onMessage(fakeMessage("x", { messageId: "dl-5", deliveryAttempt: 5 }));
    expect(calls.map((r) => [r.outcome, r.deliveryAttempt, r.error?.message])).toEqual([
      ["failed", 5, "poison"],
    ]);
    fail = false;
    const acked = fakeMessage("x", { messageId: "dl-5", deliveryAttempt: 6 });
    await onMessage(acked);
    expect(acked.settlements).toEqual(["ack"]);
    expect(calls).toHaveLength(1);
  });

  it("a hook that throws, rejects or hangs is logged and the message is still nacked", async () => {
    const hooks: Record<string, () => unknown> = {
      throws: () => {
        throw new Error("hook broke");
      },
      rejects: () => Promise.reject(new Error("hook broke")),
      "a thenable whose then throws": () => ({
        // biome-ignore lint/suspicious/noThenProperty: a hostile thenable, on purpose
        get then() {
          throw new Error("hook broke");
        },
      }),
    };
    for (const [name, hook] of Object.entries(hooks)) {
      const logger = captureLogger();
      const onMessage = idempotentMessage(
        {
          backend: new InMemoryLock(),
          logger,
          deadLetter: { maxDeliveryAttempts: 5, onExhausted: hook },
        },
        () => {
          throw new Error("poison");
        },
      );
      const message = fakeMessage("x", { messageId: `dl-6-${name}`, deliveryAttempt: 5 });
      await onMessage(message);
      expect(message.settlements, name).toEqual(["nack"]);
      const hookLine = logger.at("ERROR").find((l) => l.fields?.outcome === "hook_failed");
      expect(hookLine?.fields?.reason, name).toBe("Error: hook broke");
    }
  });

  it("a hook that never settles holds the nack 5 s at most", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const logger = captureLogger();
    const onMessage = idempotentMessage(
      {
        backend: new InMemoryLock(),
        logger,
        deadLetter: { maxDeliveryAttempts: 5, onExhausted: () => new Promise(() => {}) },
      },
      () => {
        throw new Error("poison");
      },
    );
    const message = fakeMessage("x", { messageId: "dl-7", deliveryAttempt: 7 });
    const settled = onMessage(message);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(message.settlements).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await settled;
    expect(message.settlements).toEqual(["nack"]);
    expect(logger.at("WARNING").map((l) => l.fields?.outcome)).toContain("hook_timeout");
  });

  it("without a deliveryAttempt it cannot act: one warning, nacks as usual, no hook", async () => {
    const logger = captureLogger();
    const hold = gate();
    const calls: unknown[] = [];
    let runs = 0;
    const onMessage = idempotentMessage(
      {
        backend: watchedLock(),
        logger,
        deadLetter: { maxDeliveryAttempts: 5, onExhausted: (m) => calls.push(m) },
      },
      async () => {
        runs += 1;
        await hold.promise;
      },
    );
    const running = onMessage(fakeMessage("x", { messageId: "dl-8" }));
    await until(() => runs === 1);
    // The pull client reports 0 without a dead-letter policy; a hand-made message, none.
    const copies = [
      fakeMessage("x", { messageId: "dl-8", deliveryAttempt: 0 }),
      fakeMessage("x", { messageId: "dl-8" }),
    ];
    for (const copy of copies) await onMessage(copy);
    expect(copies.map((c) => c.settlements)).toEqual([["nack"], ["nack"]]);
    expect(calls).toEqual([]);
    const inactive = logger.lines.filter((l) => l.fields?.outcome === "dead_letter_inactive");
    expect(inactive).toHaveLength(1);
    expect(inactive[0]?.message).toMatch(/no deliveryAttempt.*doctor/);
    hold.open();
    await running;
  });
});

describe("deadLetter on the push surfaces", () => {
  it("push simulator: contention alone never dead-letters a message whose holder finishes", async () => {
    // The 4th held answer: with deadLetter the copy on attempt 4 (of 5) is waiting; without
    // it, attempt 5 has just been refused, and Pub/Sub dead-letters the message.
    const run = async (deadLetter: { maxDeliveryAttempts: number } | undefined) => {
      const hold = gate();
      let runs = 0;
      const handler = idempotentHttp(
        {
          backend: watchedLock((n) => n === 4 && hold.open()),
          logger: captureLogger(),
          deadLetter,
        },
        async () => {
          runs += 1;
          await hold.promise;
        },
      );
      const report = await simulatePushDeliveries({
        handler,
        messages: [pushBody({ po: "4711" }, { messageId: "dl-push-1" })],
        copies: 2,
        concurrency: 2,
        backoffMs: 1,
        maxRedeliveries: 20,
        maxDeliveryAttempts: 5,
      });
      return { report, runs };
    };
    const aware = await run({ maxDeliveryAttempts: 5 });
    expect(aware.report.deadLettered).toEqual([]);
    expect(aware.report.messages[0]?.statuses).toEqual([503, 503, 204, 204]);
    expect(aware.runs).toBe(1);
    const control = await run(undefined);
    expect(control.report.deadLettered).toEqual(["dl-push-1"]);
    expect(control.report.messages[0]?.statuses.filter((s) => s === 503)).toHaveLength(4);
  });

  it("idempotentHttp: the wait ends when the client closes the request", async () => {
    const logger = captureLogger();
    const hold = gate();
    const client = new AbortController();
    // The copy's second held answer: it waits; the client gives up now.
    const backend = watchedLock((n) => n === 2 && client.abort());
    let runs = 0;
    const exhausted: string[] = [];
    const handler = idempotentHttp(
      {
        backend,
        logger,
        deadLetter: {
          maxDeliveryAttempts: 5,
          onExhausted: (push, reason) =>
            exhausted.push(`${push.message.messageId} ${reason.outcome}`),
        },
      },
      async () => {
        runs += 1;
        await hold.promise;
      },
    );
    const server = await listen(createServer((req, res) => void handler(req, res)));
    try {
      const body = (attempt: number) =>
        JSON.stringify({ ...pushBody("x", { messageId: "dl-push-2" }), deliveryAttempt: attempt });
      const headers = { "content-type": "application/json" };
      const first = fetch(server.url, { method: "POST", headers, body: body(1) });
      await until(() => runs === 1);
      const copy = fetch(server.url, {
        method: "POST",
        headers,
        body: body(5),
        signal: client.signal,
      });
      await expect(copy).rejects.toThrow();
      // No default bound (600 s) would end this test: only the closed request does.
      await until(() => exhausted.length === 1);
      expect(exhausted).toEqual(["dl-push-2 held"]);
      expect(logger.lines.map((l) => l.fields?.outcome)).toContain("client_gone");
      hold.open();
      expect((await first).status).toBe(204);
    } finally {
      await server.close();
    }
  });

  it("idempotentHttp: the wait stays inside the request timeout", async () => {
    const hold = gate();
    const backend = watchedLock();
    let runs = 0;
    const handler = idempotentHttp(
      {
        backend,
        logger: captureLogger(),
        requestTimeoutMs: 100,
        leaseMs: 60_000,
        deadLetter: { maxDeliveryAttempts: 5 },
      },
      async () => {
        runs += 1;
        await hold.promise;
      },
    );
    const server = await listen(createServer((req, res) => void handler(req, res)));
    try {
      const post = (attempt: number) =>
        fetch(server.url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            ...pushBody("x", { messageId: "dl-push-3" }),
            deliveryAttempt: attempt,
          }),
        });
      const first = post(1);
      await until(() => runs === 1);
      const copy = await post(5);
      expect(copy.status).toBe(503);
      expect(backend.held).toBeGreaterThan(1); // it did wait, then answered within the deadline
      hold.open();
      expect((await first).status).toBe(204);
    } finally {
      await server.close();
    }
  });

  it("idempotent (CloudEvent): the last attempt waits and resolves; an exhausted one rejects after the hook", async () => {
    const hold = gate();
    const backend = watchedLock((n) => n === 2 && hold.open());
    const exhausted: ExhaustedReason[] = [];
    let runs = 0;
    const fn = idempotent(
      {
        backend,
        logger: captureLogger(),
        deadLetter: {
          maxDeliveryAttempts: 5,
          onExhausted: (_event, reason) => exhausted.push(reason),
        },
      },
      async (event: { data: { message: { messageId: string } } }) => {
        runs += 1;
        if (event.data.message.messageId === "dl-ce-2") throw new Error("poison");
        await hold.promise;
      },
    );
    const event = (id: string, attempt: number) => ({
      specversion: "1.0",
      type: "google.cloud.pubsub.topic.v1.messagePublished",
      source: "//pubsub.googleapis.com/projects/p/topics/t",
      id: `${id}-${attempt}`,
      data: { message: { messageId: id, data: "" }, subscription: "s", deliveryAttempt: attempt },
    });
    const first = fn(event("dl-ce-1", 1));
    await until(() => runs === 1);
    await expect(fn(event("dl-ce-1", 4))).resolves.toBeUndefined();
    await first;
    expect(runs).toBe(1);
    await expect(fn(event("dl-ce-2", 5))).rejects.toThrow("poison");
    expect(exhausted.map((r) => [r.outcome, r.key, r.deliveryAttempt])).toEqual([
      ["failed", "dl-ce-2", 5],
    ]);
  });
});
