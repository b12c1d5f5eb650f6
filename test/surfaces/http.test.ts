import { Buffer } from "node:buffer";
import { createServer } from "node:http";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import type { Logger } from "../../src/core/types.js";
import { idempotentHttp } from "../../src/surfaces/index.js";
import { pushBody } from "../../src/testing/index.js";
import { captureLogger, gate, listen, post, pushMounts } from "./helpers.js";

const closers: (() => Promise<void>)[] = [];
const unhandled: unknown[] = [];
process.on("unhandledRejection", (reason) => unhandled.push(reason));
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
  // A malformed body must never leave a rejected promise behind (it would crash a server).
  expect(unhandled).toEqual([]);
});

/** The same gateway mounted every way users mount it; each returns the URL to POST to. */
const mounts = pushMounts(closers);

function gateway(logger: Logger, backend = new InMemoryLock()) {
  const calls: string[] = [];
  const fn = idempotentHttp({ backend, logger }, async (message) => {
    calls.push(message.messageId);
    if (message.text() === "fail") throw new Error("boom");
    if (message.text() === "slow") await slowGate.promise;
  });
  return { fn, calls, backend };
}
let slowGate = gate();

describe.each(Object.keys(mounts))("idempotentHttp on %s", (mountName) => {
  const mount = mounts[mountName]!;

  it("204 on success and on a duplicate, which skips the handler", async () => {
    const logger = captureLogger();
    const { fn, calls } = gateway(logger);
    const url = await mount(fn);
    const body = pushBody({ order: 7 }, { messageId: "m-1", snakeCase: true });
    expect((await post(url, body)).status).toBe(204);
    expect((await post(url, body)).status).toBe(204);
    expect(calls).toEqual(["m-1"]);
  });

  it("503 and one warning line on contention", async () => {
    const logger = captureLogger();
    slowGate = gate();
    const { fn, calls } = gateway(logger);
    const url = await mount(fn);
    const body = pushBody("slow", { messageId: "m-2", deliveryAttempt: 3 });
    const first = post(url, body);
    while (calls.length === 0) await new Promise((r) => setTimeout(r, 5));
    const second = await post(url, body);
    expect(second.status).toBe(503);
    slowGate.open();
    expect((await first).status).toBe(204);
    const warnings = logger.at("WARNING");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields).toMatchObject({ key: "m-2", deliveryAttempt: 3 });
    expect(warnings[0]?.fields.leaseExpiresAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it("500 when the handler throws, and the redelivery runs again", async () => {
    const logger = captureLogger();
    const { fn, calls } = gateway(logger);
    const url = await mount(fn);
    const body = pushBody("fail", { messageId: "m-3" });
    expect((await post(url, body)).status).toBe(500);
    expect((await post(url, body)).status).toBe(500);
    expect(calls).toEqual(["m-3", "m-3"]);
    expect(logger.at("ERROR")).toHaveLength(2);
  });

  it("400 when no key resolves", async () => {
    const logger = captureLogger();
    const fn = idempotentHttp(
      { backend: new InMemoryLock(), logger, key: () => undefined },
      () => {},
    );
    const url = await mount(fn);
    const response = await post(url, pushBody("x"));
    expect(response.status).toBe(400);
    // The key function was asked and returned nothing: the reason says so, not "no messageId".
    expect(response.text.trim()).toBe(
      "no idempotency key could be resolved for the message: the key function (options.key) returned undefined for this message (read as a Pub/Sub push envelope); it must return a non-empty string",
    );
  });

  it.each(malformedBodies())("400 for a malformed body: %s", async (_name, body, contentType) => {
    const logger = captureLogger();
    const { fn, calls } = gateway(logger);
    const url = await mount(fn);
    const response = await post(url, body, { "content-type": contentType });
    expect(response.status).toBe(400);
    expect(calls).toEqual([]);
    // express.json() rejects non-object JSON itself, with its own HTML page, before the gateway.
    // functions-framework does the same for bodies that are not JSON at all.
    if (response.text.startsWith("<!DOCTYPE") && mountName !== "node:http") return;
    expect(response.text.trim()).toMatch(/^malformed Pub\/Sub push envelope: /);
    expect(response.text.trim().split("\n")).toHaveLength(1);
  });

  // Without headers and without a `message` member a body may be an unwrapped push whose
  // subscription writes no metadata: it has no messageId, so the default key refuses it.
  it.each(bodiesWithoutMessage())("400 for a body that is no push: %s", async (_name, body) => {
    const logger = captureLogger();
    const { fn, calls } = gateway(logger);
    const url = await mount(fn);
    const response = await post(url, body, { "content-type": "application/json" });
    expect(response.status).toBe(400);
    expect(calls).toEqual([]);
    if (response.text.startsWith("<!DOCTYPE") && mountName !== "node:http") return;
    expect(response.text.trim()).toMatch(
      /^no idempotency key could be resolved for the message: read as an unwrapped push without metadata \(\d+ bytes\): no x-goog-pubsub-message-id header and no push envelope/,
    );
    expect(response.text.trim().split("\n")).toHaveLength(1);
  });

  // Declared JSON, but not JSON: malformed, whatever the key option, and the reason says where.
  it.each(bodiesNotJson())("400 for a body that is not JSON: %s", async (_name, body, reason) => {
    const logger = captureLogger();
    const runs: string[] = [];
    const fn = idempotentHttp(
      { backend: new InMemoryLock(), logger, key: ({ message }) => message.attributes.po },
      (m) => void runs.push(m.messageId),
    );
    const url = await mount(fn);
    const response = await post(url, body, { "content-type": "application/json" });
    expect(response.status).toBe(400);
    expect(runs).toEqual([]);
    // express.json() and functions-framework answer a body that is not JSON themselves.
    if (response.text.startsWith("<!DOCTYPE") && mountName !== "node:http") return;
    // express.json() makes an empty body `{}`: JSON without a message, refused as unkeyed.
    if (mountName === "express json" && body === "") return;
    expect(response.text.trim()).toBe(reason);
    expect(logger.at("WARNING").map((l) => l.fields)).toEqual([{ outcome: "malformed", reason }]);
  });
});

/** [name, raw body, the exact 400 reason]: bodies declared application/json that are not JSON. */
function bodiesNotJson(): [string, string, string][] {
  const shape = "a Pub/Sub push is a JSON envelope { message, subscription }";
  // The parser's own words, as this Node.js writes them: V8 quotes at most a few characters.
  const notJson = (body: string) => {
    let why = "";
    try {
      JSON.parse(body);
    } catch (error) {
      why = (error as Error).message;
    }
    expect(why.length).toBeLessThan(100);
    return `malformed push request: the body is declared application/json but is not valid JSON (${why}); ${shape}`;
  };
  const large = `x${"y".repeat(100_000)}`;
  return [
    ["hello", "hello", notJson("hello")],
    [
      "a truncated envelope",
      '{"message":{"messageId":"1","da',
      notJson('{"message":{"messageId":"1","da'),
    ],
    ["a large body is not echoed", large, notJson(large)],
    [
      "empty",
      "",
      `malformed push request: the body is declared application/json but is empty; ${shape}`,
    ],
  ];
}

/** [name, raw body text]: JSON bodies with no `message` member, no JSON object. */
function bodiesWithoutMessage(): [string, string][] {
  return [
    ["JSON null", "null"],
    ["JSON array", JSON.stringify([{ messageId: "1" }])],
    ["JSON string", JSON.stringify("hello")],
    ["JSON number", "42"],
    ["no message", JSON.stringify({ subscription: "s" })],
    ["message only in the prototype", '{"__proto__":{"message":{"messageId":"1"}}}'],
  ];
}

/** [name, raw body text, content type]: none of these may ever get a 2xx. */
function malformedBodies(): [string, string, string][] {
  const json = (v: unknown) => JSON.stringify(v);
  const ok = { data: Buffer.from("x").toString("base64"), messageId: "1" };
  const cases: [string, string][] = [
    ["message is a string", json({ message: "hi" })],
    ["message is an array", json({ message: [ok] })],
    ["message is null", json({ message: null })],
    ["data not base64", json({ message: { ...ok, data: "***" } })],
    ["data is a number", json({ message: { ...ok, data: 12 } })],
    ["messageId missing", json({ message: { data: ok.data } })],
    ["messageId a number", json({ message: { data: ok.data, messageId: 12 } })],
    ["messageId empty", json({ message: { data: ok.data, messageId: "" } })],
    ["messageId and message_id disagree", json({ message: { ...ok, message_id: "2" } })],
    ["attributes an array", json({ message: { ...ok, attributes: ["a"] } })],
    ["attribute not a string", json({ message: { ...ok, attributes: { a: 1 } } })],
    ["attributes a string", json({ message: { ...ok, attributes: "a=b" } })],
    ["publishTime not a timestamp", json({ message: { ...ok, publishTime: "yesterday" } })],
    ["publishTime a number", json({ message: { ...ok, publishTime: 5 } })],
    ["orderingKey a number", json({ message: { ...ok, orderingKey: 5 } })],
    ["deliveryAttempt a string", json({ message: ok, deliveryAttempt: "2" })],
    ["deliveryAttempt a fraction", json({ message: ok, deliveryAttempt: 1.5 })],
    ["deliveryAttempt negative", json({ message: ok, deliveryAttempt: -1 })],
    ["subscription a number", json({ message: ok, subscription: 3 })],
  ];
  return cases.map(([name, body]) => [name, body, "application/json"]);
}

describe("idempotentHttp details", () => {
  it("refuses a copy of a completed push that is malformed where its key does not look", async () => {
    const logger = captureLogger();
    const seen: unknown[] = [];
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger }, (message) => {
      seen.push({
        text: message.text(),
        attributes: { ...message.attributes },
        publishTime: message.publishTime,
        orderingKey: message.orderingKey,
        deliveryAttempt: message.deliveryAttempt,
        subscription: message.subscription,
        frozen: Object.isFrozen(message) && Object.isFrozen(message.attributes),
      });
    });
    const s = await listen(createServer((req, res) => void fn(req, res)));
    closers.push(s.close);
    const publishTime = "2026-12-06T07:00:00.123456789+01:00";
    const good = pushBody("hello", {
      messageId: "done-1",
      attributes: { orderId: "4711" },
      publishTime,
      orderingKey: "customer-9",
      deliveryAttempt: 2,
    });
    expect((await post(s.url, good)).status).toBe(204);
    expect(seen).toEqual([
      {
        text: "hello",
        attributes: { orderId: "4711" },
        publishTime,
        orderingKey: "customer-9",
        deliveryAttempt: 2,
        subscription: good.subscription,
        frozen: true,
      },
    ]);
    // The key is done: a well-formed copy is a duplicate (204), a malformed one is still a 400
    // with its reason, as it would be before any claim.
    expect((await post(s.url, good)).status).toBe(204);
    const copies: Array<[Record<string, unknown>, RegExp]> = [
      [{ data: "not base64!" }, /message\.data is not valid base64/],
      [{ data: 7 }, /message\.data must be a base64 string/],
      [{ attributes: { orderId: 4711 } }, /message\.attributes\["orderId"\] must be a string/],
      [{ publishTime: "yesterday" }, /message\.publishTime is not a timestamp/],
      [{ orderingKey: 9 }, /message\.orderingKey must be a string/],
    ];
    for (const [change, reason] of copies) {
      const copy = { ...good, message: { ...good.message, ...change } };
      const answer = await post(s.url, copy);
      expect(answer.status).toBe(400);
      expect(answer.text).toMatch(reason);
    }
    for (const change of [{ deliveryAttempt: -1 }, { subscription: 5 }]) {
      expect((await post(s.url, { ...good, ...change })).status).toBe(400);
    }
    expect(seen).toHaveLength(1);
  });

  it("reads an unparsed body up to the limit and answers 413 beyond it", async () => {
    const logger = captureLogger();
    let calls = 0;
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger, maxBodyBytes: 1024 }, () => {
      calls += 1;
    });
    const s = await listen(createServer((req, res) => void fn(req, res)));
    closers.push(s.close);
    expect((await post(s.url, pushBody("small"))).status).toBe(204);
    const big = await post(s.url, pushBody("y".repeat(4096)));
    expect(big.status).toBe(413);
    expect(calls).toBe(1);
    // The server survived and keeps answering.
    expect((await post(s.url, pushBody("again"))).status).toBe(204);
  });

  it("keeps a response the handler sent itself", async () => {
    const fn = idempotentHttp(
      { backend: new InMemoryLock(), logger: captureLogger() },
      (message, _req, res) => {
        res.statusCode = 200;
        res.end(`handled ${message.messageId}`);
      },
    );
    const s = await listen(createServer((req, res) => void fn(req, res)));
    closers.push(s.close);
    const response = await post(s.url, pushBody("x", { messageId: "own" }));
    expect(response).toEqual({ status: 200, text: "handled own" });
  });

  it("types: the handler sees the framework's own request and response types", async () => {
    const app = express();
    app.use(express.json());
    let path = "";
    app.post(
      "/push",
      idempotentHttp(
        { backend: new InMemoryLock(), logger: captureLogger() },
        (_message, req: express.Request, res: express.Response) => {
          path = req.path;
          res.status(202).send("taken");
        },
      ),
    );
    const s = await listen(createServer(app));
    closers.push(s.close);
    expect(await post(`${s.url}push`, pushBody("x"))).toEqual({ status: 202, text: "taken" });
    expect(path).toBe("/push");
  });

  it("a store error before the work gives 500", async () => {
    const backend = new InMemoryLock();
    backend.claim = () => Promise.reject(new Error("store down"));
    const logger = captureLogger();
    const fn = idempotentHttp({ backend, logger }, () => {});
    const s = await listen(createServer((req, res) => void fn(req, res)));
    closers.push(s.close);
    const response = await post(s.url, pushBody("x"));
    expect(response.status).toBe(500);
    expect(response.text).not.toContain("store down");
    expect(logger.at("ERROR")[0]?.fields.reason).toContain("store down");
  });
});

describe("idempotentHttp() on functions-framework http", () => {
  it("maps success, duplicate, contention, failure and malformed bodies", async () => {
    const backend = new InMemoryLock();
    const logger = captureLogger();
    let calls = 0;
    const url = await mounts["functions-framework http"]!(
      idempotentHttp({ backend, logger }, (message) => {
        calls += 1;
        if (message.text() === "fail") throw new Error("boom");
      }),
    );
    const body = pushBody("ok", { messageId: "h-1" });
    expect((await post(url, body)).status).toBe(204);
    expect((await post(url, body)).status).toBe(204);
    expect(calls).toBe(1);
    expect((await post(url, pushBody("fail"))).status).toBe(500);
    await backend.claim("h-held", 60_000);
    expect((await post(url, pushBody("ok", { messageId: "h-held" }))).status).toBe(503);
    expect(logger.at("WARNING")).toHaveLength(1);
    const bad = await post(url, { message: { data: "not base64!", messageId: "x" } });
    expect(bad.status).toBe(400);
    expect(bad.text.trim().split("\n")).toHaveLength(1);
    expect(bad.text).toContain("base64");
  });
});

describe("large bodies, and keys no store can hold", () => {
  it("a 10 MB message (13.4 MB as base64 JSON) is handled with the default body limit", async () => {
    const data = Buffer.alloc(10_000_000, 7);
    let seen = 0;
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, (m) => {
      seen = m.data.byteLength;
    });
    const url = await mounts["node:http"]!(fn);
    const body = JSON.stringify({
      message: { messageId: "big", data: data.toString("base64") },
      subscription: "projects/p/subscriptions/s",
    });
    expect(body.length).toBeGreaterThan(13_000_000);
    expect((await post(url, body)).status).toBe(204);
    expect(seen).toBe(10_000_000);
  });

  it("a messageId over the key limit is a 400 with a reason, and the handler never runs", async () => {
    let runs = 0;
    const url = await mounts["node:http"]!(
      idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, () => {
        runs++;
      }),
    );
    const tooLong = await post(url, pushBody("x", { messageId: "9".repeat(1025) }));
    expect(tooLong.status).toBe(400);
    expect(tooLong.text).toMatch(/at most 1024 UTF-8 bytes/);
    const loneSurrogate = await post(url, '{"message":{"messageId":"k\\ud800","data":""}}');
    expect(loneSurrogate.status).toBe(400);
    expect(loneSurrogate.text).toMatch(/lone surrogate/);
    expect(runs).toBe(0);
  });

  it("the README's Express mounting (no global parser) takes a 1 MB message", async () => {
    const app = express();
    app.post(
      "/push",
      idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, () => {}),
    );
    const s = await listen(createServer(app));
    closers.push(s.close);
    const big = pushBody(Buffer.alloc(1_000_000, 2));
    expect((await post(`${s.url}push`, big)).status).toBe(204);
  });
});
