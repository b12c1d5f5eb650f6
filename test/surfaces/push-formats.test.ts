import { Buffer } from "node:buffer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { MalformedMessage } from "../../src/core/errors.js";
import { assertValidKey } from "../../src/core/validate.js";
import {
  cloudEventKey,
  cloudEventSourceIdKey,
  defaultMessageKey,
  idempotentHttp,
  MESSAGE_PUBLISHED_TYPE,
  type ParsedMessage,
  parsePushRequest,
} from "../../src/surfaces/index.js";
import {
  cloudEventRequest,
  type PushFormat,
  pushBody,
  pushRequest,
} from "../../src/testing/index.js";

const STORAGE = {
  type: "google.cloud.storage.object.v1.finalized",
  source: "//storage.googleapis.com/projects/_/buckets/invoices",
};

/** The reason parsePushRequest refuses a request with, or undefined when it parses. */
function refusal(headers: Record<string, unknown>, body: unknown = ""): string | undefined {
  try {
    parsePushRequest({ headers: headers as never }, body);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(MalformedMessage);
    return (error as Error).message;
  }
}

/** What a handler reads of a message, to compare formats. */
function shape(message: ParsedMessage) {
  return {
    messageId: message.messageId,
    text: message.text(),
    subscription: message.subscription,
    orderingKey: message.orderingKey,
    key: defaultMessageKey(message),
  };
}

describe("parsePushRequest: one message whatever the push format", () => {
  const formats: PushFormat[] = [
    "wrapped",
    "unwrapped-with-metadata",
    "cloudevent-binary",
    "cloudevent-structured",
  ];
  it.each(formats)("%s gives the same messageId, data, subscription and key", (format) => {
    const request = pushRequest(
      { po: "4711" },
      {
        messageId: "m-1",
        orderingKey: "customer-9",
        subscription: "projects/p/subscriptions/orders",
        publishTime: "2026-01-02T03:04:05.678Z",
      },
      format,
    );
    const message = parsePushRequest(request, request.body);
    expect(shape(message)).toEqual({
      messageId: "m-1",
      text: '{"po":"4711"}',
      subscription: "projects/p/subscriptions/orders",
      orderingKey: "customer-9",
      key: "m-1",
    });
    expect(message.publishTime).toBe("2026-01-02T03:04:05.678Z");
    if (format.startsWith("cloudevent")) {
      expect(message.event).toMatchObject({ id: "m-1", type: MESSAGE_PUBLISHED_TYPE });
    } else {
      expect(message.event).toBeUndefined();
    }
  });

  it("an unwrapped push is keyed by its header, not by a `message` in its payload", () => {
    const payload = { message: { messageId: "evil", data: Buffer.from("x").toString("base64") } };
    const request = pushRequest(payload, { messageId: "42" }, "unwrapped-with-metadata");
    for (const body of [request.body, request.body.toString("utf8"), payload]) {
      const message = parsePushRequest(request, body);
      expect(message.messageId).toBe("42");
      expect(message.json()).toEqual(payload);
      expect(defaultMessageKey(message)).toBe("42");
    }
  });

  it("a push body of the header's own messageId stays a push body", () => {
    const body = pushBody("hi", { messageId: "42" });
    const message = parsePushRequest({ headers: { "x-goog-pubsub-message-id": "42" } }, body);
    expect(message.text()).toBe("hi");
  });

  it("reads the emulator's x-goog-ordering-key and refuses two ordering keys that disagree", () => {
    const headers = { "x-goog-pubsub-message-id": "1", "x-goog-ordering-key": "k" };
    expect(parsePushRequest({ headers }, "").orderingKey).toBe("k");
    expect(refusal({ ...headers, "x-goog-pubsub-ordering-key": "other" })).toMatch(
      /x-goog-pubsub-ordering-key and x-goog-ordering-key headers disagree/,
    );
  });

  it("reads UTF-8 sent raw in a header, as node:http hands it over", () => {
    const headers = {
      "x-goog-pubsub-message-id": "1",
      "x-goog-pubsub-ordering-key": Buffer.from("kunde-ü", "utf8").toString("latin1"),
    };
    expect(parsePushRequest({ headers }, "").orderingKey).toBe("kunde-ü");
  });

  it("an unwrapped push without metadata has no messageId and no default key", () => {
    const request = pushRequest({ po: "1" }, { attributes: { a: "b" } }, "unwrapped");
    expect(request.headers).toEqual({});
    const message = parsePushRequest(request, request.body);
    expect(message.messageId).toBe("");
    expect(message.json()).toEqual({ po: "1" });
    expect(defaultMessageKey(message)).toBeUndefined();
    expect(parsePushRequest({}, undefined).data.byteLength).toBe(0);
  });

  it("refuses a body a form parser already took apart", () => {
    expect(
      refusal({ "content-type": "application/x-www-form-urlencoded" }, { '{"po":"1"}': "" }),
    ).toMatch(/parsed as a form/);
  });
});

describe("parsePushRequest: the attributes of an unwrapped push with metadata", () => {
  it("are the headers Pub/Sub wrote for them, by lower-case name, without the transport's", () => {
    const request = pushRequest(
      "x",
      { messageId: "7", attributes: { orderId: "o-7", po: "4711" } },
      "unwrapped-with-metadata",
    );
    const headers = {
      ...request.headers,
      host: "run.app",
      "content-type": "application/json",
      "content-length": "1",
      "user-agent": "APIs-Google",
      authorization: "Bearer t",
      "x-forwarded-for": "1.2.3.4",
      "x-cloud-trace-context": "abc/1",
      traceparent: "00-1-2-01",
      forwarded: "for=1.2.3.4",
      "accept-encoding": "gzip",
    };
    const message = parsePushRequest({ headers }, request.body);
    expect(message.attributes).toEqual({ orderid: "o-7", po: "4711" });
    expect(Object.isFrozen(message.attributes)).toBe(true);
  });

  it("key a message by its business attribute, the documented way", async () => {
    const backend = new InMemoryLock();
    const runs: string[] = [];
    const fn = idempotentHttp(
      { backend, key: ({ message }) => message.attributes.po },
      (m) => void runs.push(m.messageId),
    );
    // Two messages (two ids) of one order: one run.
    for (const messageId of ["1", "2"]) {
      const { headers, body } = pushRequest(
        "x",
        { messageId, attributes: { po: "4711" } },
        "unwrapped-with-metadata",
      );
      const res = { statusCode: 0, end() {} };
      await fn({ headers, body }, res);
      expect(res.statusCode).toBe(204);
    }
    expect(runs).toEqual(["1"]);
  });

  it("a header sent twice is one attribute, its values joined as node:http joins them", () => {
    const headers = { "x-goog-pubsub-message-id": "1", Region: "eu", region: ["us", "asia"] };
    expect(parsePushRequest({ headers }, "").attributes).toEqual({ region: "eu, us, asia" });
  });

  it("an attribute named __proto__ is kept as an own property", () => {
    const headers = JSON.parse('{"x-goog-pubsub-message-id":"1","__proto__":"p"}');
    const { attributes } = parsePushRequest({ headers }, "");
    expect(Object.keys(attributes)).toEqual(["__proto__"]);
    expect(Object.getPrototypeOf(attributes)).toBe(Object.prototype);
  });

  it("a wrapped push and an unwrapped push without metadata keep their own attributes", () => {
    const headers = { "content-type": "application/json", po: "from-a-header" };
    const wrapped = parsePushRequest({ headers }, pushBody("x", { attributes: { po: "1" } }));
    expect(wrapped.attributes).toEqual({ po: "1" });
    expect(parsePushRequest({ headers: { po: "h" } }, "x").attributes).toEqual({});
  });
});

describe("parsePushRequest: a body declared JSON must be JSON", () => {
  it("names the JSON error and its place, and echoes at most a few characters", () => {
    const big = `{"message":${"x".repeat(1_000_000)}`;
    const reason = refusal({ "content-type": "application/json" }, big);
    // The parser's own words (V8 quotes a few characters around the place), never the body.
    expect(reason).toMatch(
      /^malformed push request: the body is declared application\/json but is not valid JSON \(Unexpected token 'x', .{0,40} is not valid JSON\); a Pub\/Sub push is a JSON envelope \{ message, subscription \}$/,
    );
    expect(reason?.length).toBeLessThan(300);
  });

  it("any +json type counts; without a JSON type the body is an unwrapped push's data", () => {
    expect(refusal({ "content-type": "application/vnd.x+json; charset=utf-8" }, "hi")).toMatch(
      /^malformed push request: the body is declared application\/vnd\.x\+json but is not valid JSON/,
    );
    expect(parsePushRequest({ headers: { "content-type": "text/plain" } }, "hi").text()).toBe("hi");
    // With metadata headers the body is the data, whatever its declared type says.
    const headers = { "content-type": "application/json", "x-goog-pubsub-message-id": "1" };
    expect(parsePushRequest({ headers }, "hi").text()).toBe("hi");
  });

  it("each malformed reason names what the gateway read", () => {
    const id = { "x-goog-pubsub-message-id": "1" };
    expect(refusal({ ...id, "x-goog-pubsub-publish-time": "soon" })).toMatch(
      /^malformed unwrapped push with metadata \(x-goog-pubsub-\* headers\): /,
    );
    expect(refusal({}, { message: { data: "" } })).toMatch(
      /^malformed Pub\/Sub push envelope: message\.messageId is missing$/,
    );
    expect(refusal({ "ce-id": "1", "ce-specversion": "1.0" })).toMatch(
      /^malformed CloudEvent in binary mode \(ce-\* headers\): /,
    );
    expect(refusal({ "content-type": "application/cloudevents+json" }, "{}")).toMatch(
      /^malformed CloudEvent in structured mode \(application\/cloudevents\+json\): /,
    );
  });
});

describe("parsePushRequest: malformed metadata headers are refused with a reason", () => {
  const id = "x-goog-pubsub-message-id";
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["an empty messageId", { [id]: "" }, /x-goog-pubsub-message-id header is empty/],
    ["a messageId over the key limit", { [id]: "9".repeat(1025) }, /over 1024 bytes/],
    ["a NUL", { [id]: "1\u0000" }, /control character U\+0000/],
    ["a tab", { [id]: "1\t2" }, /control character U\+0009/],
    ["DEL", { [id]: "\u007f" }, /control character U\+007F/],
    ["a C1 control", { [id]: "\u0085" }, /control character U\+0085/],
    ["a lone surrogate", { [id]: "\ud800" }, /lone surrogate/],
    ["a duplicate (array)", { [id]: ["1", "2"] }, /sent 2 times/],
    ["a duplicate (two spellings)", { [id]: "1", "X-Goog-PubSub-Message-Id": "1" }, /sent 2 times/],
    ["a number", { [id]: 1 }, /header is 1, not text/],
    ["an empty subscription", { [id]: "1", "x-goog-pubsub-subscription-name": "" }, /empty/],
    [
      "a publish time that is no timestamp",
      { [id]: "1", "x-goog-pubsub-publish-time": "yesterday" },
      /x-goog-pubsub-publish-time header is not a timestamp/,
    ],
  ];
  it.each(cases)("%s", (_name, headers, reason) => {
    expect(refusal(headers)).toMatch(reason);
  });

  it("sees a duplicate that node:http joined, through headersDistinct", () => {
    const request = {
      headers: { [id]: "1, 2" },
      headersDistinct: { [id]: ["1", "2"] },
    };
    expect(() => parsePushRequest(request, "")).toThrow(/sent 2 times/);
  });
});

describe("parsePushRequest: CloudEvents over HTTP", () => {
  it("binary and structured events that are no Pub/Sub message carry the event and its data", () => {
    const fields = {
      ...STORAGE,
      id: "7315",
      subject: "objects/a b.pdf",
      data: { name: "a b.pdf" },
      extensions: { bucket: "invoices" },
      time: "2026-01-02T03:04:05Z",
    };
    for (const mode of ["binary", "structured"] as const) {
      const request = cloudEventRequest(fields, mode);
      const message = parsePushRequest(request, request.body);
      expect(message.messageId).toBe("");
      expect(message.json()).toEqual({ name: "a b.pdf" });
      expect(message.event).toEqual({
        specversion: "1.0",
        id: "7315",
        source: STORAGE.source,
        type: STORAGE.type,
        subject: "objects/a b.pdf",
        time: "2026-01-02T03:04:05Z",
        datacontenttype: "application/json",
        extensions: { bucket: "invoices" },
      });
      expect(defaultMessageKey(message)).toBe(JSON.stringify([STORAGE.source, "7315"]));
      expect(Object.isFrozen(message.event)).toBe(true);
    }
  });

  it("reads text, bytes and data_base64 as the data", () => {
    const text = cloudEventRequest({ ...STORAGE, data: "plain é" }, "structured");
    expect(parsePushRequest(text, text.body).text()).toBe("plain é");
    const bytes = Buffer.from([0, 255, 1]);
    for (const mode of ["binary", "structured"] as const) {
      const request = cloudEventRequest({ ...STORAGE, data: bytes }, mode);
      expect(parsePushRequest(request, request.body).data).toEqual(bytes);
    }
  });

  it("percent-decodes binary-mode headers", () => {
    const headers = {
      "ce-specversion": "1.0",
      "ce-id": "1",
      "ce-source": "//x/a%20b%E2%82%AC",
      "ce-type": "t",
    };
    expect(parsePushRequest({ headers }, "").event?.source).toBe("//x/a b€");
  });

  const binary = { "ce-specversion": "1.0", "ce-id": "1", "ce-source": "s", "ce-type": "t" };
  const cases: [string, Record<string, unknown>, unknown, RegExp][] = [
    ["no ce-source", { ...binary, "ce-source": undefined }, "", /has no ce-source header/],
    ["an empty ce-id", { ...binary, "ce-id": "" }, "", /ce-id header is empty/],
    ["specversion 0.3", { ...binary, "ce-specversion": "0.3" }, "", /not "1.0"/],
    ["a stray %", { ...binary, "ce-source": "50%" }, "", /not valid percent-encoding/],
    ["a NUL once decoded", { ...binary, "ce-id": "a%00" }, "", /control character U\+0000/],
    ["a bad attribute name", { ...binary, "ce-foo_bar": "x" }, "", /names no CloudEvent attribute/],
    [
      "a ce-source given as no value",
      { ...binary, "ce-source": [] },
      "",
      /has no ce-source header/,
    ],
    ["a duplicated ce-id", { ...binary, "ce-id": ["1", "2"] }, "", /ce-id header is sent 2 times/],
    ["a time that is no timestamp", { ...binary, "ce-time": "noon" }, "", /not a timestamp/],
    [
      "a batch",
      { "content-type": "application/cloudevents-batch+json" },
      "[]",
      /cloudevents-batch\+json" is not read/,
    ],
    [
      "a structured event with data and data_base64",
      { "content-type": "application/cloudevents+json" },
      { specversion: "1.0", id: "1", source: "s", type: "t", data: 1, data_base64: "AA==" },
      /both data and data_base64/,
    ],
    [
      "a structured attribute that is an object",
      { "content-type": "application/cloudevents+json; charset=utf-8" },
      { specversion: "1.0", id: "1", source: "s", type: "t", bucket: { a: 1 } },
      /attribute bucket is \{"a":1\}, not a string/,
    ],
    [
      "a structured member that names no attribute",
      { "content-type": "application/cloudevents+json" },
      { specversion: "1.0", id: "1", source: "s", type: "t", Bad: "x" },
      /member "Bad" names no attribute/,
    ],
    [
      "a structured event that is no JSON",
      { "content-type": "application/cloudevents+json" },
      "{nope",
      /the CloudEvent is not JSON/,
    ],
    [
      "a Pub/Sub event whose data is no push envelope",
      { ...binary, "ce-type": MESSAGE_PUBLISHED_TYPE },
      "[1]",
      /CloudEvent data must be a JSON object/,
    ],
  ];
  it.each(cases)("refuses %s", (_name, headers, body, reason) => {
    expect(refusal(headers, body)).toMatch(reason);
  });

  it("reads structured extension numbers and booleans as text and skips null", () => {
    const message = parsePushRequest(
      { headers: { "content-type": "application/cloudevents+json" } },
      { specversion: "1.0", id: "1", source: "s", type: "t", n: 3, b: true, z: null },
    );
    expect(message.event?.extensions).toEqual({ n: "3", b: "true" });
    expect(message.data.byteLength).toBe(0);
  });
});

describe("the key of a CloudEvent that is no Pub/Sub message", () => {
  const nonEmpty = fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 });
  it("is unambiguous: two different (source, id) pairs never share a key", () => {
    fc.assert(
      fc.property(nonEmpty, nonEmpty, nonEmpty, nonEmpty, (s1, i1, s2, i2) => {
        fc.pre(s1 !== s2 || i1 !== i2);
        expect(cloudEventSourceIdKey(s1, i1)).not.toBe(cloudEventSourceIdKey(s2, i2));
      }),
      { numRuns: 2_000, seed: 20261203 },
    );
    // The pairs a plain separator would confuse.
    expect(cloudEventSourceIdKey("a/b", "c")).not.toBe(cloudEventSourceIdKey("a", "b/c"));
    expect(cloudEventSourceIdKey('a","b', "c")).not.toBe(cloudEventSourceIdKey("a", 'b","c'));
  });

  it("is always a key every store accepts; a long pair becomes its SHA-256", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", minLength: 1, maxLength: 900 }),
        fc.string({ unit: "grapheme", minLength: 1, maxLength: 900 }),
        (source, id) => {
          const key = cloudEventSourceIdKey(source, id);
          assertValidKey(key);
          expect(cloudEventSourceIdKey(source, id)).toBe(key);
          const json = JSON.stringify([source, id]);
          if (Buffer.byteLength(json) <= 1024) expect(key).toBe(json);
          else expect(key).toMatch(/^cloudevent-sha256:[0-9a-f]{64}$/);
        },
      ),
      { numRuns: 500, seed: 20261203 },
    );
    const exact = `//s/${"x".repeat(1024 - 12)}`;
    expect(Buffer.byteLength(JSON.stringify([exact, "1"]))).toBe(1024);
    expect(cloudEventSourceIdKey(exact, "1")).toBe(JSON.stringify([exact, "1"]));
    expect(cloudEventSourceIdKey(`${exact}y`, "1")).toMatch(/^cloudevent-sha256:/);
  });

  it("refuses an empty source or id", () => {
    expect(() => cloudEventSourceIdKey("", "1")).toThrow(/non-empty source and id/);
    expect(() => cloudEventSourceIdKey("s", "")).toThrow(/non-empty source and id/);
  });

  it("cloudEventKey keys a Pub/Sub event by messageId and any other by source and id", () => {
    const pubsub = {
      type: MESSAGE_PUBLISHED_TYPE,
      source: "//pubsub.googleapis.com/projects/p/topics/t",
      id: "ce-1",
      data: { message: { messageId: "m-1" } },
    };
    expect(cloudEventKey(pubsub)).toBe("m-1");
    expect(cloudEventKey({ ...pubsub, type: undefined })).toBe("m-1");
    // A storage event whose payload happens to hold a message id is still keyed by source and id.
    expect(cloudEventKey({ ...pubsub, ...STORAGE })).toBe(JSON.stringify([STORAGE.source, "ce-1"]));
    expect(cloudEventKey({ ...STORAGE, id: "" })).toBeUndefined();
    expect(cloudEventKey({ ...STORAGE, id: "1\u0000" })).toBeUndefined();
    expect(cloudEventKey({ type: STORAGE.type, id: "1" })).toBeUndefined();
    expect(cloudEventKey("event")).toBeUndefined();
  });
});
