import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { InvalidConfiguration } from "../../src/core/errors.js";
import { idempotentHttp, type ParsedMessage, parsePushRequest } from "../../src/surfaces/index.js";
import {
  cloudEventRequest,
  type PushFormat,
  pushRequest,
  simulatePushDeliveries,
} from "../../src/testing/index.js";
import { captureLogger, listen } from "../surfaces/helpers.js";

describe("simulatePushDeliveries", () => {
  it("delivers each message several times and the body runs once per message", async () => {
    const runs = new Map<string, number>();
    const fn = idempotentHttp(
      { backend: new InMemoryLock(), logger: captureLogger() },
      async (m) => {
        runs.set(m.messageId, (runs.get(m.messageId) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 20));
      },
    );
    const report = await simulatePushDeliveries({
      handler: fn,
      messages: [{ n: 1 }, { n: 2 }, "three", Buffer.from("four")],
      copies: 4,
      concurrency: 3,
      backoffMs: 10,
    });
    expect(report.unacked).toEqual([]);
    expect([...runs.values()]).toEqual([1, 1, 1, 1]);
    // Concurrent copies met a live holder (503) and were redelivered until they saw the duplicate.
    expect(report.statusCounts[503]).toBeGreaterThan(0);
    expect(report.statusCounts[204]).toBe(16);
    expect(report.deliveries).toBe(16 + (report.statusCounts[503] ?? 0));
  });

  it("posts to a url and reports failures that never ack", async () => {
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, () => {
      throw new Error("poison");
    });
    const s = await listen(createServer((req, res) => void fn(req, res)));
    try {
      const report = await simulatePushDeliveries({
        url: s.url,
        messages: ["x"],
        copies: 1,
        maxRedeliveries: 2,
        backoffMs: 1,
      });
      expect(report.statusCounts).toEqual({ 500: 3 });
      expect(report.unacked).toHaveLength(1);
      expect(report.messages[0]?.statuses).toEqual([500, 500, 500]);
    } finally {
      await s.close();
    }
  });

  it("with maxDeliveryAttempts, dead-letters a message whose numbered attempt is refused", async () => {
    const attempts: (number | undefined)[] = [];
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, (m) => {
      attempts.push(m.deliveryAttempt);
      throw new Error("poison");
    });
    const report = await simulatePushDeliveries({
      handler: fn,
      messages: ["x", "y"],
      copies: 1,
      maxRedeliveries: 50,
      backoffMs: 0,
      maxDeliveryAttempts: 5,
    });
    expect(report.deadLettered).toHaveLength(2);
    expect(report.messages.map((m) => [m.statuses, m.deadLettered])).toEqual([
      [[500, 500, 500, 500, 500], true],
      [[500, 500, 500, 500, 500], true],
    ]);
    expect(attempts.filter((a) => a === 5)).toHaveLength(2);
  });

  it("refuses counts that would deliver nothing or loop, naming the option", async () => {
    const handler = idempotentHttp({ backend: new InMemoryLock() }, () => {});
    for (const [option, value] of [
      ["copies", 0],
      ["concurrency", 0],
      ["maxRedeliveries", -1],
      ["backoffMs", 1.5],
      ["maxDeliveryAttempts", 4],
      ["maxDeliveryAttempts", 101],
      ["maxDeliveryAttempts", 7.5],
    ] as const) {
      await expect(
        simulatePushDeliveries({ handler, messages: ["x"], [option]: value }),
      ).rejects.toThrow(new RegExp(`${option} must be an integer`));
    }
  });
});

describe("simulatePushDeliveries with a handler that routes (path)", () => {
  /** An app that serves the push endpoint on /pubsub/push only, as an express app would. */
  const routed = () => {
    let runs = 0;
    const push = idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, () => {
      runs += 1;
    });
    const app = (req: IncomingMessage, res: ServerResponse) => {
      if (req.method === "POST" && req.url === "/pubsub/push") return push(req, res);
      res.statusCode = 404;
      res.end("Cannot POST");
    };
    return { app, runs: () => runs };
  };

  it("posts to the path given: each message runs once and is acked", async () => {
    const { app, runs } = routed();
    const report = await simulatePushDeliveries({
      handler: app,
      path: "/pubsub/push",
      messages: ["a", "b"],
      backoffMs: 1,
    });
    expect(report.unacked).toEqual([]);
    expect(report.statusCounts[404]).toBeUndefined();
    expect(runs()).toBe(2);
  });

  it("a route the handler does not serve: throws naming the path it posted to and the 404", async () => {
    const { app, runs } = routed();
    const run = simulatePushDeliveries({
      handler: app,
      messages: ["a"],
      copies: 1,
      maxRedeliveries: 1,
      backoffMs: 1,
    });
    await expect(run).rejects.toThrow(InvalidConfiguration);
    await expect(run).rejects.toThrow(
      /^simulatePushDeliveries posted to "\/" \(http:\/\/127\.0\.0\.1:\d+\/\) and the handler answered 404 to every delivery \(2\): it serves another route\. Pass the path it serves, e\.g\. path: "\/pubsub\/push"$/,
    );
    expect(runs()).toBe(0);
  });

  it("a handler that answers 404 to some deliveries only: reported, not taken for a wrong route", async () => {
    const push = idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, () => {});
    let deliveries = 0;
    const report = await simulatePushDeliveries({
      handler: (req, res) => {
        deliveries += 1;
        if (deliveries > 1) return push(req, res);
        res.statusCode = 404;
        res.end();
      },
      messages: ["a"],
      copies: 1,
      backoffMs: 1,
    });
    expect(report.messages[0]?.statuses).toEqual([404, 204]);
    expect(report.unacked).toEqual([]);
  });

  it.each<[string, Record<string, unknown>]>([
    ["a path without its leading /", { path: "pubsub/push" }],
    ["a path that names another host", { path: "//example.com/push" }],
    ["a path with a space", { path: "/pubsub push" }],
    ["a path beside a url", { path: "/pubsub/push", url: "http://127.0.0.1:9/" }],
  ])("refuses %s before any delivery", async (_, options) => {
    const handler = idempotentHttp({ backend: new InMemoryLock() }, () => {});
    await expect(simulatePushDeliveries({ handler, messages: ["x"], ...options })).rejects.toThrow(
      /^simulatePushDeliveries (path must be a path beginning with "\/"|takes path with handler only)/,
    );
  });
});

describe("simulatePushDeliveries in every push format", () => {
  const formats: PushFormat[] = [
    "wrapped",
    "unwrapped-with-metadata",
    "cloudevent-binary",
    "cloudevent-structured",
  ];
  it.each(formats)("%s: each message runs once and every copy is acked", async (format) => {
    const seen: ParsedMessage[] = [];
    const handler = idempotentHttp(
      { backend: new InMemoryLock(), logger: captureLogger() },
      async (message) => {
        seen.push(message);
        await new Promise((r) => setTimeout(r, 10));
      },
    );
    const report = await simulatePushDeliveries({
      handler,
      format,
      messages: [{ po: "1" }, { po: "2" }],
      copies: 3,
      backoffMs: 5,
    });
    expect(report.unacked).toEqual([]);
    expect(seen.map((m) => m.json<{ po: string }>().po).sort()).toEqual(["1", "2"]);
    expect(seen.map((m) => m.messageId).sort()).toEqual(
      report.messages.map((m) => m.messageId).sort(),
    );
    // Only a format with a push body carries the deliveryAttempt.
    const attempts = seen.map((m) => m.deliveryAttempt);
    if (format === "unwrapped-with-metadata") expect(attempts).toEqual([undefined, undefined]);
    else expect(attempts.every((a) => typeof a === "number")).toBe(true);
  });

  it("unwrapped without metadata is refused by the default key and kept by a key option", async () => {
    const refused = await simulatePushDeliveries({
      handler: idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, () => {}),
      format: "unwrapped",
      messages: [{ po: "1" }],
      copies: 1,
      maxRedeliveries: 1,
      backoffMs: 1,
    });
    expect(refused.statusCounts).toEqual({ 400: 2 });
    let runs = 0;
    const keyed = await simulatePushDeliveries({
      handler: idempotentHttp(
        {
          backend: new InMemoryLock(),
          logger: captureLogger(),
          key: ({ message }) => message.json<{ po: string }>().po,
        },
        () => void runs++,
      ),
      format: "unwrapped",
      messages: [{ po: "1" }, { po: "1" }],
    });
    expect(keyed.unacked).toEqual([]);
    expect(runs).toBe(1);
  });

  it("sends prebuilt requests as they are: a Cloud Storage event runs once", async () => {
    const events: string[] = [];
    const handler = idempotentHttp(
      { backend: new InMemoryLock(), logger: captureLogger() },
      (message) => void events.push(`${message.event?.source} ${message.event?.id}`),
    );
    const request = cloudEventRequest({
      type: "google.cloud.storage.object.v1.finalized",
      source: "//storage.googleapis.com/projects/_/buckets/b",
      id: "gen-1",
      data: { name: "a.csv" },
    });
    const report = await simulatePushDeliveries({
      handler,
      requests: [request, cloudEventRequest({ type: "t", source: "//s", id: "x" }, "structured")],
      copies: 3,
    });
    expect(report.unacked).toEqual([]);
    expect(report.messages.map((m) => m.messageId)).toEqual(["gen-1", "x"]);
    expect(events).toEqual(["//storage.googleapis.com/projects/_/buckets/b gen-1", "//s x"]);
  });
});

describe("pushRequest and cloudEventRequest", () => {
  it("an unwrapped push with metadata carries the documented headers, attributes as headers", () => {
    const request = pushRequest(
      "data",
      {
        messageId: "9",
        attributes: { orderId: "o-1", "Content-Type": "text/plain" },
        orderingKey: "kunde-ü",
        publishTime: "2026-01-02T03:04:05Z",
        subscription: "projects/p/subscriptions/s",
      },
      "unwrapped-with-metadata",
    );
    expect(request.headers).toEqual({
      orderid: "o-1",
      "content-type": "text/plain",
      "x-goog-pubsub-message-id": "9",
      "x-goog-pubsub-subscription-name": "projects/p/subscriptions/s",
      "x-goog-pubsub-publish-time": "2026-01-02T03:04:05Z",
      "x-goog-pubsub-ordering-key": Buffer.from("kunde-ü").toString("latin1"),
    });
    expect(request.body.toString()).toBe("data");
    expect(parsePushRequest(request, request.body).orderingKey).toBe("kunde-ü");
    expect(pushRequest("data", { attributes: { a: "b" } }, "unwrapped").headers).toEqual({});
  });

  it("refuses what cannot be sent", () => {
    expect(() =>
      pushRequest("x", { attributes: { "a b": "1" } }, "unwrapped-with-metadata"),
    ).toThrow(InvalidConfiguration);
    expect(() => pushRequest("x", {}, "nope" as PushFormat)).toThrow(/unknown format "nope"/);
    expect(() => cloudEventRequest({ type: "", source: "//s" })).toThrow(/type must be/);
    expect(() => cloudEventRequest({ type: "t", source: "//s", extensions: { Bad: "1" } })).toThrow(
      /extension name "Bad"/,
    );
  });

  it("percent-encodes binary-mode attributes, which the gateway decodes", () => {
    const subject = 'objects/50% "off" ü.pdf';
    const request = cloudEventRequest({
      type: "t",
      source: "//s",
      subject,
      extensions: { n: " " },
    });
    expect(request.headers["ce-subject"]).toBe("objects/50%25%20%22off%22%20%C3%BC.pdf");
    const event = parsePushRequest(request, request.body).event;
    expect(event?.subject).toBe(subject);
    expect(event?.extensions).toEqual({ n: " " });
  });

  it("sends the authorization header with every format", async () => {
    const seen: (string | undefined)[] = [];
    const fn = idempotentHttp(
      { backend: new InMemoryLock(), logger: captureLogger() },
      (_m, req) => {
        const value = req.headers?.authorization;
        seen.push(typeof value === "string" ? value : undefined);
      },
    );
    await simulatePushDeliveries({
      handler: fn,
      format: "cloudevent-binary",
      messages: ["x"],
      copies: 1,
      authorization: "Bearer t",
    });
    expect(seen).toEqual(["Bearer t"]);
  });
});
