// Every push format on every way idempotentHttp is mounted: the same message is keyed and
// de-duplicated the same way, and the handler reads the same ParsedMessage.
import { afterEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { idempotentHttp, type ParsedMessage } from "../../src/surfaces/index.js";
import {
  type CloudEventFields,
  cloudEventRequest,
  type PushHttpRequest,
  pushRequest,
} from "../../src/testing/index.js";
import { captureLogger, gate, type PushHandler, pushMounts } from "./helpers.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

const mounts = pushMounts(closers);

async function send(url: string, request: PushHttpRequest) {
  const response = await fetch(url, {
    method: "POST",
    headers: request.headers,
    body: request.body,
  });
  return { status: response.status, text: await response.text() };
}

/** What the handler read, for comparing formats. */
function seen(message: ParsedMessage) {
  return {
    messageId: message.messageId,
    data: message.json(),
    subscription: message.subscription,
    orderingKey: message.orderingKey,
    eventType: message.event?.type,
  };
}

const SUBSCRIPTION = "projects/p/subscriptions/orders";
const STORAGE: CloudEventFields = {
  type: "google.cloud.storage.object.v1.finalized",
  source: "//storage.googleapis.com/projects/_/buckets/invoices",
};

let sequence = 0;
/** [format, the request, what the handler must read] for one fresh message. */
function formats(): [string, PushHttpRequest, ReturnType<typeof seen>][] {
  const n = ++sequence;
  const fields = { subscription: SUBSCRIPTION, orderingKey: "c-1" };
  const pubsub = (id: string) => ({
    messageId: id,
    data: { po: id },
    subscription: SUBSCRIPTION,
    orderingKey: "c-1",
  });
  // An event that is no Pub/Sub message: no messageId, subscription or ordering key.
  const storage = (name: string) => ({
    messageId: "",
    data: { name },
    subscription: undefined,
    orderingKey: undefined,
    eventType: STORAGE.type,
  });
  const id = (tag: string) => `${tag}-${n}`;
  return [
    [
      "wrapped",
      pushRequest({ po: id("w") }, { ...fields, messageId: id("w") }, "wrapped"),
      { ...pubsub(id("w")), eventType: undefined },
    ],
    [
      "unwrapped with metadata",
      pushRequest({ po: id("u") }, { ...fields, messageId: id("u") }, "unwrapped-with-metadata"),
      { ...pubsub(id("u")), eventType: undefined },
    ],
    [
      "unwrapped with metadata and a Content-Type attribute",
      pushRequest(
        { po: id("uj") },
        { ...fields, messageId: id("uj"), attributes: { "Content-Type": "application/json" } },
        "unwrapped-with-metadata",
      ),
      { ...pubsub(id("uj")), eventType: undefined },
    ],
    [
      "binary CloudEvent of a Pub/Sub message",
      pushRequest({ po: id("b") }, { ...fields, messageId: id("b") }, "cloudevent-binary"),
      { ...pubsub(id("b")), eventType: "google.cloud.pubsub.topic.v1.messagePublished" },
    ],
    [
      "structured CloudEvent of a Pub/Sub message",
      pushRequest({ po: id("s") }, { ...fields, messageId: id("s") }, "cloudevent-structured"),
      { ...pubsub(id("s")), eventType: "google.cloud.pubsub.topic.v1.messagePublished" },
    ],
    [
      "binary Cloud Storage event",
      cloudEventRequest({ ...STORAGE, id: id("gb"), data: { name: id("gb") } }, "binary"),
      storage(id("gb")),
    ],
    [
      "structured Cloud Storage event",
      cloudEventRequest({ ...STORAGE, id: id("gs"), data: { name: id("gs") } }, "structured"),
      storage(id("gs")),
    ],
  ];
}

describe.each(Object.keys(mounts))("push formats on %s", (mountName) => {
  const mount = mounts[mountName] as (fn: PushHandler) => Promise<string>;

  it("every format runs once, is answered 204 twice and reads the same message", async () => {
    const runs: ReturnType<typeof seen>[] = [];
    const logger = captureLogger();
    const url = await mount(
      idempotentHttp({ backend: new InMemoryLock(), logger }, (message) => {
        runs.push(seen(message));
      }),
    );
    const cases = formats();
    for (const [name, request, expected] of cases) {
      const first = await send(url, request);
      const again = await send(url, request);
      expect([name, first.status, again.status]).toEqual([name, 204, 204]);
      expect([name, runs.at(-1)]).toEqual([name, expected]);
    }
    expect(runs).toHaveLength(cases.length);
    expect(logger.at("WARNING")).toEqual([]);
  });

  it("an unwrapped payload with a `message` of its own is keyed by its header", async () => {
    const ids: string[] = [];
    const url = await mount(
      idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, (message) => {
        ids.push(message.messageId);
      }),
    );
    const payload = { message: { messageId: "from-the-payload", data: "" } };
    const a = pushRequest(payload, { messageId: "header-1" }, "unwrapped-with-metadata");
    const b = pushRequest(payload, { messageId: "header-2" }, "unwrapped-with-metadata");
    for (const request of [a, b, a, b]) expect((await send(url, request)).status).toBe(204);
    expect(ids).toEqual(["header-1", "header-2"]);
  });

  it("an unwrapped push without metadata: 400 by default, keyed by the key option", async () => {
    const logger = captureLogger();
    const refusing = await mount(
      idempotentHttp({ backend: new InMemoryLock(), logger }, () => {
        throw new Error("must not run");
      }),
    );
    const request = pushRequest({ orderId: "o-1" }, {}, "unwrapped");
    const refused = await send(refusing, request);
    expect(refused.status).toBe(400);
    expect(refused.text).toMatch(/no Pub\/Sub messageId.*--push-no-wrapper-write-metadata/);

    const orders: string[] = [];
    const keyed = await mount(
      idempotentHttp(
        {
          backend: new InMemoryLock(),
          logger,
          key: ({ message }) => `order:${message.json<{ orderId: string }>().orderId}`,
        },
        (message) => {
          orders.push(message.json<{ orderId: string }>().orderId);
        },
      ),
    );
    expect((await send(keyed, request)).status).toBe(204);
    expect((await send(keyed, pushRequest({ orderId: "o-1" }, {}, "unwrapped"))).status).toBe(204);
    expect(orders).toEqual(["o-1"]);
  });

  it("a held CloudEvent is answered 503, which Eventarc retries", async () => {
    const slow = gate();
    let runs = 0;
    const url = await mount(
      idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, async () => {
        runs += 1;
        await slow.promise;
      }),
    );
    const request = cloudEventRequest({ ...STORAGE, id: `held-${++sequence}`, data: {} });
    const first = send(url, request);
    while (runs === 0) await new Promise((r) => setTimeout(r, 5));
    expect((await send(url, request)).status).toBe(503);
    slow.open();
    expect((await first).status).toBe(204);
    expect((await send(url, request)).status).toBe(204);
    expect(runs).toBe(1);
  });

  it("malformed metadata or CloudEvent headers are 400 with a reason, never run", async () => {
    let runs = 0;
    const url = await mount(
      idempotentHttp({ backend: new InMemoryLock(), logger: captureLogger() }, () => {
        runs += 1;
      }),
    );
    const base = pushRequest("x", { messageId: "1" }, "unwrapped-with-metadata");
    const event = cloudEventRequest({ ...STORAGE, data: "x" });
    const cases: [Record<string, string>, RegExp][] = [
      [
        { ...base.headers, "x-goog-pubsub-message-id": "" },
        /x-goog-pubsub-message-id header is empty/,
      ],
      [
        { ...base.headers, "x-goog-pubsub-message-id": "9".repeat(1025) },
        /x-goog-pubsub-message-id header is over 1024 bytes/,
      ],
      [
        { ...base.headers, "x-goog-pubsub-publish-time": "soon" },
        /x-goog-pubsub-publish-time header is not a timestamp/,
      ],
      [{ ...event.headers, "ce-source": "" }, /ce-source header is empty/],
      [{ ...event.headers, "ce-id": "%zz" }, /ce-id header is not valid percent-encoding/],
      [{ ...event.headers, "ce-specversion": "0.3" }, /ce-specversion header is "0.3"/],
    ];
    for (const [headers, reason] of cases) {
      const response = await send(url, { headers, body: base.body });
      expect([response.status, response.text]).toEqual([400, expect.stringMatching(reason)]);
    }
    expect(runs).toBe(0);
  });
});
