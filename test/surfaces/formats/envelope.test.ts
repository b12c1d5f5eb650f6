import { Buffer } from "node:buffer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InMemoryLock } from "../../../src/backends/memory/index.js";
import { MalformedMessage } from "../../../src/core/errors.js";
import { isTimestamp } from "../../../src/surfaces/formats/fields.js";
import {
  cloudEventMessageId,
  idempotentMessage,
  parseCloudEvent,
  parseEnvelope,
  parsePubSubMessage,
  parsePushBody,
} from "../../../src/surfaces/index.js";
import { fakeMessage, pushBody, structuredCloudEvent } from "../../../src/testing/index.js";
import { captureLogger } from "../helpers.js";

describe("the envelope parser", () => {
  it("reads a raw push body in camelCase and snake_case", () => {
    const m = parsePushBody({
      message: {
        data: Buffer.from('{"a":1}').toString("base64"),
        attributes: { k: "v" },
        message_id: "42",
        publish_time: "2024-01-02T03:04:05.678Z",
        orderingKey: "o",
      },
      subscription: "projects/p/subscriptions/s",
      deliveryAttempt: 2,
    });
    expect(m.messageId).toBe("42");
    expect(m.json<{ a: number }>().a).toBe(1);
    expect(m.attributes).toEqual({ k: "v" });
    expect(m.publishTime).toBe("2024-01-02T03:04:05.678Z");
    expect(m.orderingKey).toBe("o");
    expect(m.deliveryAttempt).toBe(2);
    expect(m.subscription).toBe("projects/p/subscriptions/s");
  });

  it("accepts a JSON string or bytes, and a message without data", () => {
    const body = pushBody("hi", { messageId: "7" });
    expect(parsePushBody(JSON.stringify(body)).text()).toBe("hi");
    expect(parsePushBody(Buffer.from(JSON.stringify(body))).text()).toBe("hi");
    const empty = parsePushBody({ message: { messageId: "8", attributes: { only: "attrs" } } });
    expect(empty.data.byteLength).toBe(0);
    expect("deliveryAttempt" in empty).toBe(false);
  });

  it("reads a structured CloudEvent and one converted by functions-framework", () => {
    const event = structuredCloudEvent("ce", { messageId: "9" });
    expect(parseCloudEvent(event).text()).toBe("ce");
    // The shape functions-framework makes of a raw push body: no subscription.
    const converted = {
      type: "google.cloud.pubsub.topic.v1.messagePublished",
      data: { message: { "@type": "x", data: "Y2U=", attributes: {}, messageId: "10" } },
    };
    const m = parseCloudEvent(converted);
    expect(m.messageId).toBe("10");
    expect(m.subscription).toBeUndefined();
    expect(cloudEventMessageId(converted)).toBe("10");
  });

  it("rejects a CloudEvent of another type", () => {
    expect(() =>
      parseCloudEvent({ type: "google.cloud.storage.object.v1.finalized", data: {} }),
    ).toThrow(/is not google.cloud.pubsub.topic.v1.messagePublished/);
  });

  it("reads a pull Message", () => {
    const m = parsePubSubMessage(fakeMessage({ z: 1 }, { messageId: "11", deliveryAttempt: 5 }));
    expect(m.json()).toEqual({ z: 1 });
    expect(m.publishTime).toBeInstanceOf(Date);
    expect(m.deliveryAttempt).toBe(5);
  });

  it("detects the shape", () => {
    expect(parseEnvelope(fakeMessage("a", { messageId: "p" })).messageId).toBe("p");
    expect(parseEnvelope(structuredCloudEvent("a", { messageId: "c" })).messageId).toBe("c");
    expect(parseEnvelope(pushBody("a", { messageId: "r" })).messageId).toBe("r");
  });

  it("json() on a non-JSON payload throws MalformedMessage", () => {
    expect(() => parsePushBody(pushBody("not json")).json()).toThrow(MalformedMessage);
  });

  it("accepts unpadded url-safe base64 but not other characters", () => {
    const urlSafe = Buffer.from([0xfb, 0xff]).toString("base64url");
    expect([...parsePushBody({ message: { messageId: "1", data: urlSafe } }).data]).toEqual([
      0xfb, 0xff,
    ]);
    expect(() => parsePushBody({ message: { messageId: "1", data: "a b" } })).toThrow(/base64/);
    expect(() => parsePushBody({ message: { messageId: "1", data: "abcde" } })).toThrow(/base64/);
    expect(parsePushBody({ message: { messageId: "1", data: "aGk" } }).text()).toBe("hi");
    expect(() => parsePushBody({ message: { messageId: "1", data: "aGk=x" } })).toThrow(/base64/);
  });

  it("every reason is a single line that starts the same way", () => {
    const bad = [
      undefined,
      "",
      "{",
      [],
      { message: { messageId: "1", attributes: { "a\nb": 3 } } },
    ];
    for (const body of bad) {
      try {
        parsePushBody(body);
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(MalformedMessage);
        expect((error as Error).message).toMatch(/^malformed Pub\/Sub message: [^\n]+$/);
      }
    }
  });

  it("base64 of 4 MB and more is checked without overflowing the stack", () => {
    const data = Buffer.alloc(6_000_000, 1).toString("base64");
    expect(parsePushBody({ message: { messageId: "1", data } }).data.byteLength).toBe(6_000_000);
    expect(() => parsePushBody({ message: { messageId: "1", data: `${data}!` } })).toThrow(
      /not valid base64/,
    );
  });

  it("attributes named __proto__ and constructor are kept as data", async () => {
    const raw =
      '{"message":{"messageId":"a","data":"","attributes":{"__proto__":"x","constructor":"y","toString":"z"}}}';
    const message = parsePushBody(raw);
    expect(Object.keys(message.attributes).sort()).toEqual([
      "__proto__",
      "constructor",
      "toString",
    ]);
    const PROTO = "__proto__";
    expect(message.attributes[PROTO]).toBe("x");
    expect(message.attributes.constructor).toBe("y");
    expect(Object.getPrototypeOf(message.attributes)).toBe(Object.prototype);
    const pulled = fakeMessage("x", { attributes: JSON.parse('{"__proto__":"p"}') });
    let seen: Record<string, string> = {};
    await idempotentMessage({ backend: new InMemoryLock(), logger: captureLogger() }, (m) => {
      seen = { ...m.attributes };
    })(pulled);
    expect(Object.keys(seen)).toEqual(["__proto__"]);
  });
});

describe("publishTime: the timestamp rule", () => {
  const pad = (n: number, width: number) => String(n).padStart(width, "0");
  // RFC 3339 as Pub/Sub writes it (UTC), or with an offset, over the whole range the fast
  // pattern admits.
  const offset = fc.oneof(
    fc.constant("Z"),
    fc
      .record({
        sign: fc.constantFrom("+", "-"),
        hour: fc.integer({ min: 0, max: 23 }),
        minute: fc.integer({ min: 0, max: 59 }),
      })
      .map((o) => `${o.sign}${pad(o.hour, 2)}:${pad(o.minute, 2)}`),
  );
  const pubsubTime = fc
    .record({
      year: fc.integer({ min: 0, max: 9999 }),
      month: fc.integer({ min: 1, max: 12 }),
      day: fc.integer({ min: 1, max: 31 }),
      hour: fc.integer({ min: 0, max: 23 }),
      minute: fc.integer({ min: 0, max: 59 }),
      second: fc.integer({ min: 0, max: 59 }),
      fraction: fc.option(fc.stringMatching(/^\d{1,9}$/), { nil: undefined }),
      zone: offset,
    })
    .map(
      (t) =>
        `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}T${pad(t.hour, 2)}:${pad(t.minute, 2)}:${pad(t.second, 2)}${t.fraction === undefined ? "" : `.${t.fraction}`}${t.zone}`,
    );

  it("accepts exactly what Date.parse accepts, for Pub/Sub's form and for any text", () => {
    const agrees = (text: string) => isTimestamp(text) === !Number.isNaN(Date.parse(text));
    fc.assert(fc.property(pubsubTime, agrees), { numRuns: 2_000 });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          pubsubTime.map((t) => t.replace("T", " ")),
        ),
        agrees,
      ),
      { numRuns: 2_000 },
    );
    for (const text of [
      "2026-12-03T23:59:60Z",
      "2026-13-01T00:00:00Z",
      "2026-12-03T18:53:25.Z",
      "2026-12-03T18:53:25+24:00",
      "2026-12-03T18:53:25+00:60",
    ]) {
      expect(isTimestamp(text)).toBe(false);
      expect(() => parsePushBody({ message: { messageId: "1", publishTime: text } })).toThrow(
        /publishTime is not a timestamp/,
      );
    }
  });
});
