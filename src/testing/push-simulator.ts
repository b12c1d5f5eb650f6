import { Buffer } from "node:buffer";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { InvalidConfiguration } from "../core/errors.js";
import { MESSAGE_PUBLISHED_TYPE } from "../surfaces/envelope.js";
import type { createTestIdentity } from "./push-auth.js";

/**
 * A message payload for the builders below: bytes and strings go as they are, anything
 * else as JSON.
 *
 * @example
 * ```ts
 * import { type Payload, pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const payloads: Payload[] = [{ po: "4711" }, "plain text", Buffer.from([1, 2, 3])];
 * const bodies = payloads.map((payload) => pushBody(payload));
 * ```
 */
export type Payload = Buffer | Uint8Array | string | number | boolean | object | null;

/**
 * Envelope fields for the builders below; each has a realistic default.
 *
 * @example
 * ```ts
 * import { type MessageFields, pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const fields: MessageFields = { messageId: "42", attributes: { orderId: "4711" }, deliveryAttempt: 3 };
 * const body = pushBody({ po: "4711" }, fields);
 * ```
 */
export interface MessageFields {
  /** Default: a fresh id from {@link nextMessageId}. */
  messageId?: string;
  /** Default: none. */
  attributes?: Record<string, string>;
  /** RFC 3339 time; default now. */
  publishTime?: string;
  /** Default: none. */
  orderingKey?: string;
  /** Default `projects/test-project/subscriptions/test-sub` (not used by `fakeMessage`). */
  subscription?: string;
  /** Default: left out, as without a dead-letter policy. */
  deliveryAttempt?: number;
  /** Also send `message_id`/`publish_time`, as the real service and the emulator do. */
  snakeCase?: boolean;
}

let counter = 0;
/**
 * A fresh message id; numeric-looking like the service's, unique within the process.
 *
 * @example
 * ```ts
 * import { nextMessageId, pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const messageId = nextMessageId();
 * const first = pushBody("hi", { messageId });
 * const redelivery = pushBody("hi", { messageId }); // same id: a duplicate
 * ```
 */
export function nextMessageId(): string {
  counter += 1;
  return `${Date.now()}${String(counter).padStart(6, "0")}`;
}

/**
 * The bytes a {@link Payload} is sent as: bytes as they are, a string as UTF-8, anything
 * else as its JSON text.
 *
 * @example
 * ```ts
 * import { payloadBytes } from "gcp-pubsub-idempotency/testing";
 *
 * payloadBytes({ po: "4711" }).toString(); // '{"po":"4711"}'
 * ```
 */
export function payloadBytes(payload: Payload): Buffer {
  if (Buffer.isBuffer(payload)) return payload;
  if (payload instanceof Uint8Array) return Buffer.from(payload);
  if (typeof payload === "string") return Buffer.from(payload, "utf8");
  return Buffer.from(JSON.stringify(payload), "utf8");
}

const DEFAULT_SUBSCRIPTION = "projects/test-project/subscriptions/test-sub";
const DEFAULT_TOPIC = "projects/test-project/topics/test-topic";

// The builders' results are type aliases, not interfaces: like the object literals they
// describe, they stay assignable to index-signature types (functions-framework's CloudEvent).

/**
 * The `message` object of a push body, as {@link pushBody} builds it.
 *
 * @example
 * ```ts
 * import { type PushBodyMessage, pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const message: PushBodyMessage = pushBody("hi", { snakeCase: true }).message;
 * console.log(message.data, message.message_id === message.messageId); // aGk= true
 * ```
 */
export type PushBodyMessage = {
  /** The payload, base64. */
  data: string;
  /** The attributes; `{}` when none were given. */
  attributes: Record<string, string>;
  /** The message id. */
  messageId: string;
  /** RFC 3339 time. */
  publishTime: string;
  /** The same as `messageId`; only with `snakeCase`. */
  message_id?: string;
  /** The same as `publishTime`; only with `snakeCase`. */
  publish_time?: string;
  /** Only when given. */
  orderingKey?: string;
};

/**
 * A raw push request body, as {@link pushBody} builds it and a push subscription POSTs it.
 *
 * @example
 * ```ts
 * import { parsePushBody } from "gcp-pubsub-idempotency";
 * import { type PushBody, pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const body: PushBody = pushBody({ po: "4711" }, { deliveryAttempt: 2 });
 * parsePushBody(body).deliveryAttempt; // 2
 * ```
 */
export type PushBody = {
  /** The message itself. */
  message: PushBodyMessage;
  /** The subscription's full name. */
  subscription: string;
  /** Only when given (a dead-letter policy sends it). */
  deliveryAttempt?: number;
};

function messageObject(
  payload: Payload,
  fields: MessageFields,
  messageId: string,
): PushBodyMessage {
  const publishTime = fields.publishTime ?? new Date().toISOString();
  return {
    data: payloadBytes(payload).toString("base64"),
    attributes: fields.attributes ?? {},
    messageId,
    publishTime,
    ...(fields.snakeCase ? { message_id: messageId, publish_time: publishTime } : {}),
    ...(fields.orderingKey === undefined ? {} : { orderingKey: fields.orderingKey }),
  };
}

/**
 * A raw push request body, as a push subscription POSTs it.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { pushBody } from "gcp-pubsub-idempotency/testing";
 *
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, async () => {});
 * const res = { statusCode: 0, end() {} };
 * await handler({ body: pushBody({ po: "4711" }) }, res);
 * console.log(res.statusCode); // 204
 * ```
 */
export function pushBody(payload: Payload, fields: MessageFields = {}): PushBody {
  const messageId = fields.messageId ?? nextMessageId();
  return {
    message: messageObject(payload, fields, messageId),
    subscription: fields.subscription ?? DEFAULT_SUBSCRIPTION,
    ...(fields.deliveryAttempt === undefined ? {} : { deliveryAttempt: fields.deliveryAttempt }),
  };
}

/**
 * A structured-mode `messagePublished` CloudEvent, as {@link structuredCloudEvent} builds it.
 *
 * @example
 * ```ts
 * import { type StructuredCloudEvent, structuredCloudEvent } from "gcp-pubsub-idempotency/testing";
 *
 * const event: StructuredCloudEvent = structuredCloudEvent("hi", { messageId: "7" });
 * console.log(event.id, event.data.message.messageId); // 7 7
 * ```
 */
export type StructuredCloudEvent = {
  /** Always `1.0`. */
  specversion: string;
  /** The message id. */
  id: string;
  /** Always `google.cloud.pubsub.topic.v1.messagePublished`. */
  type: string;
  /** The topic, `//pubsub.googleapis.com/projects/test-project/topics/test-topic`. */
  source: string;
  /** The publish time. */
  time: string;
  /** Always `application/json`. */
  datacontenttype: string;
  /** The push body. */
  data: PushBody;
};

/**
 * A structured-mode `messagePublished` CloudEvent (the JSON body of the request), as
 * functions-framework hands it to a `cloudEvent` function.
 *
 * @example
 * ```ts
 * import { idempotent, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { structuredCloudEvent } from "gcp-pubsub-idempotency/testing";
 *
 * const handler = idempotent({ backend: new InMemoryLock() }, async () => console.log("once"));
 * const event = structuredCloudEvent({ po: "4711" });
 * await handler(event);
 * await handler(event); // a duplicate: skipped, resolves
 * ```
 */
export function structuredCloudEvent(
  payload: Payload,
  fields: MessageFields = {},
): StructuredCloudEvent {
  const messageId = fields.messageId ?? nextMessageId();
  const body = pushBody(payload, { ...fields, messageId });
  return {
    specversion: "1.0",
    id: messageId,
    type: MESSAGE_PUBLISHED_TYPE,
    source: `//pubsub.googleapis.com/${DEFAULT_TOPIC}`,
    time: body.message.publishTime,
    datacontenttype: "application/json",
    data: body,
  };
}

/**
 * A binary-mode CloudEvent request, as {@link binaryCloudEvent} builds it.
 *
 * @example
 * ```ts
 * import { type BinaryCloudEvent, binaryCloudEvent } from "gcp-pubsub-idempotency/testing";
 *
 * const { headers, body }: BinaryCloudEvent = binaryCloudEvent("hi");
 * console.log(headers["ce-id"] === body.message.messageId); // true
 * ```
 */
export type BinaryCloudEvent = {
  /** `content-type` and the `ce-*` attributes of the event. */
  headers: {
    /** Always `application/json`. */
    "content-type": string;
    /** The event's `specversion`. */
    "ce-specversion": string;
    /** The event's `id`: the message id. */
    "ce-id": string;
    /** The event's `type`. */
    "ce-type": string;
    /** The event's `source`: the topic. */
    "ce-source": string;
    /** The event's `time`: the publish time. */
    "ce-time": string;
  };
  /** The push body, sent as the request body. */
  body: PushBody;
};

/**
 * A binary-mode `messagePublished` CloudEvent: `ce-*` headers and the data as the body.
 * POST it to a functions-framework server to test a `cloudEvent` function over HTTP.
 *
 * @example
 * ```ts
 * import { binaryCloudEvent } from "gcp-pubsub-idempotency/testing";
 *
 * const { headers, body } = binaryCloudEvent({ po: "4711" });
 * await fetch("http://127.0.0.1:8080/", { method: "POST", headers, body: JSON.stringify(body) });
 * ```
 */
export function binaryCloudEvent(payload: Payload, fields: MessageFields = {}): BinaryCloudEvent {
  const event = structuredCloudEvent(payload, fields);
  return {
    headers: {
      "content-type": "application/json",
      "ce-specversion": event.specversion,
      "ce-id": event.id,
      "ce-type": event.type,
      "ce-source": event.source,
      "ce-time": event.time,
    },
    body: event.data,
  };
}

/**
 * A fake `@google-cloud/pubsub` `Message` that records how it was settled.
 *
 * @example
 * ```ts
 * import { idempotentMessage, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { type FakeMessage, fakeMessage } from "gcp-pubsub-idempotency/testing";
 *
 * const listener = idempotentMessage({ backend: new InMemoryLock() }, async () => {});
 * const message: FakeMessage = fakeMessage({ po: "4711" });
 * await listener(message);
 * console.log(message.settlements); // ["ack"]
 * ```
 */
export interface FakeMessage {
  /** The message id. */
  readonly id: string;
  /** The payload bytes. */
  readonly data: Buffer;
  /** The attributes; `{}` when none were given. */
  readonly attributes: Record<string, string>;
  /** The given `publishTime`, or the time it was built. */
  readonly publishTime: Date;
  /** Only when given. */
  readonly orderingKey?: string;
  /** Only when given. */
  readonly deliveryAttempt?: number;
  /** Every ack()/nack() call in order. */
  readonly settlements: ("ack" | "nack")[];
  /** Records `"ack"` in `settlements`. */
  ack(): void;
  /** Records `"nack"` in `settlements`. */
  nack(): void;
}

/**
 * A {@link FakeMessage} for testing a pull listener built with `idempotentMessage`; pass
 * the same `messageId` twice for a redelivery. `subscription` is not used.
 *
 * @example
 * ```ts
 * import { idempotentMessage, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { fakeMessage } from "gcp-pubsub-idempotency/testing";
 *
 * const listener = idempotentMessage({ backend: new InMemoryLock() }, async () => {});
 * const redelivery = fakeMessage("hi", { messageId: "1" });
 * await listener(fakeMessage("hi", { messageId: "1" }));
 * await listener(redelivery);
 * console.log(redelivery.settlements); // ["ack"]: a duplicate is acked
 * ```
 */
export function fakeMessage(payload: Payload, fields: MessageFields = {}): FakeMessage {
  const settlements: ("ack" | "nack")[] = [];
  return {
    id: fields.messageId ?? nextMessageId(),
    data: payloadBytes(payload),
    attributes: fields.attributes ?? {},
    publishTime: new Date(fields.publishTime ?? Date.now()),
    ...(fields.orderingKey === undefined ? {} : { orderingKey: fields.orderingKey }),
    ...(fields.deliveryAttempt === undefined ? {} : { deliveryAttempt: fields.deliveryAttempt }),
    settlements,
    ack: () => {
      settlements.push("ack");
    },
    nack: () => {
      settlements.push("nack");
    },
  };
}

/**
 * A `node:http` request listener, e.g. the function `idempotentHttp` returns.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 * import type { RequestListener } from "gcp-pubsub-idempotency/testing";
 *
 * const handler: RequestListener = idempotentHttp({ backend: new InMemoryLock() }, async () => {});
 * ```
 */
export type RequestListener = (req: IncomingMessage, res: ServerResponse) => unknown;

/**
 * Options of {@link simulatePushDeliveries}. Give `url` or `handler`.
 *
 * @example
 * ```ts
 * import { type SimulateOptions, simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";
 *
 * const options: SimulateOptions = {
 *   url: "http://127.0.0.1:8080/push",
 *   messages: [{ po: "1" }, { po: "2" }],
 *   copies: 5,
 *   concurrency: 3,
 * };
 * const report = await simulatePushDeliveries(options);
 * ```
 */
export interface SimulateOptions {
  /** The push endpoint; or give `handler` and a local server is started on port 0. */
  url?: string;
  /** Served on 127.0.0.1 for the run when no `url` is given; a rejection answers 500. */
  handler?: RequestListener;
  /** Payloads (each becomes a message with a fresh id) or push bodies from {@link pushBody}. */
  messages: readonly (Payload | PushBody)[];
  /** Deliveries of each message that Pub/Sub makes regardless of acks; default 3. */
  copies?: number;
  /** How many of those copies go at the same moment; default 2. The rest follow one by one. */
  concurrency?: number;
  /** Redeliveries after a non-2xx (like a retry policy); default 5. */
  maxRedeliveries?: number;
  /** Backoff before the n-th redelivery: `backoffMs * 2^(n-1)`; default 20. */
  backoffMs?: number;
  /** Send `deliveryAttempt` in the envelope (as with a dead-letter policy); default true. */
  deliveryAttempts?: boolean;
  /**
   * The `Authorization` header of each delivery, as an authenticated push subscription sends
   * it; a function is called per delivery (e.g. `() => identity.authorization()` with a
   * {@link createTestIdentity} identity). Default: none.
   */
  authorization?: string | (() => string | undefined);
}

/**
 * What happened to one message in {@link simulatePushDeliveries}.
 *
 * @example
 * ```ts
 * import { type MessageReport, simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";
 *
 * const report = await simulatePushDeliveries({ url: "http://127.0.0.1:8080/", messages: ["hi"] });
 * const first: MessageReport | undefined = report.messages[0];
 * console.log(first?.messageId, first?.statuses); // e.g. "1733…" [204, 204, 204]
 * ```
 */
export interface MessageReport {
  /** The message id every delivery of it carried. */
  readonly messageId: string;
  /** The HTTP status of each delivery, in the order the responses came; 0 for a network error. */
  readonly statuses: number[];
  /** True when at least one delivery got a 2xx. */
  readonly acked: boolean;
}

/**
 * The result of {@link simulatePushDeliveries}.
 *
 * @example
 * ```ts
 * import { type SimulationReport, simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";
 *
 * const report: SimulationReport = await simulatePushDeliveries({
 *   url: "http://127.0.0.1:8080/",
 *   messages: [{ po: "4711" }],
 * });
 * if (report.unacked.length > 0) throw new Error(`never acked: ${report.unacked.join(", ")}`);
 * ```
 */
export interface SimulationReport {
  /** Count of responses per HTTP status; network errors count under 0. */
  readonly statusCounts: Record<number, number>;
  /** Requests made in all, redeliveries included. */
  readonly deliveries: number;
  /** One report per message, in the order of `options.messages`. */
  readonly messages: MessageReport[];
  /** Message ids that never got a 2xx. */
  readonly unacked: string[];
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function isPushBody(value: unknown): value is PushBody {
  if (value === null || typeof value !== "object" || Buffer.isBuffer(value)) return false;
  const message = (value as { message?: unknown }).message;
  return (
    message !== null &&
    typeof message === "object" &&
    typeof (message as { messageId?: unknown }).messageId === "string"
  );
}

async function post(url: string, body: unknown, authorization?: string): Promise<number> {
  try {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (authorization !== undefined) headers.authorization = authorization;
    const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/**
 * Deliver every message several times over real HTTP, the way Pub/Sub does under
 * at-least-once delivery: `concurrency` copies at once, the remaining copies one after
 * another, and after each non-2xx a redelivery with exponential backoff. Returns counts
 * of the statuses seen. Throws a TypeError when neither `url` nor `handler` is given.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 * import { simulatePushDeliveries } from "gcp-pubsub-idempotency/testing";
 *
 * let runs = 0;
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, async () => void runs++);
 * const report = await simulatePushDeliveries({ handler, messages: [{ po: "1" }, { po: "2" }] });
 * console.log(runs, report.unacked); // 2 []
 * ```
 */
export async function simulatePushDeliveries(options: SimulateOptions): Promise<SimulationReport> {
  const whole = (name: string, value: number | undefined, fallback: number, least: number) => {
    const n = value ?? fallback;
    if (!Number.isSafeInteger(n) || n < least) {
      throw new InvalidConfiguration(
        `simulatePushDeliveries ${name} must be an integer >= ${least}, got ${String(value)}`,
      );
    }
    return n;
  };
  const copies = whole("copies", options.copies, 3, 1);
  const concurrency = Math.min(whole("concurrency", options.concurrency, 2, 1), copies);
  const maxRedeliveries = whole("maxRedeliveries", options.maxRedeliveries, 5, 0);
  const backoffMs = whole("backoffMs", options.backoffMs, 20, 0);
  const withAttempts = options.deliveryAttempts ?? true;
  const { authorization } = options;
  const authorizationOf = typeof authorization === "function" ? authorization : () => authorization;

  let url = options.url;
  let server: ReturnType<typeof createServer> | undefined;
  if (url === undefined) {
    const { handler } = options;
    if (!handler) throw new TypeError("simulatePushDeliveries needs a url or a handler");
    server = createServer((req, res) => {
      Promise.resolve(handler(req, res)).catch(() => {
        if (!res.headersSent) res.statusCode = 500;
        res.end();
      });
    });
    await new Promise<void>((done) => server?.listen(0, "127.0.0.1", done));
    const { port } = server.address() as AddressInfo;
    url = `http://127.0.0.1:${port}/`;
  }
  const target = url;

  const statusCounts: Record<number, number> = {};
  let deliveries = 0;
  const count = (status: number) => {
    statusCounts[status] = (statusCounts[status] ?? 0) + 1;
    deliveries += 1;
  };

  const runMessage = async (input: Payload | PushBody) => {
    const base = isPushBody(input) ? input : pushBody(input as Payload);
    const statuses: number[] = [];
    let attempt = 0;
    // Each copy is an independent delivery chain that retries its own nacks.
    const chain = async () => {
      for (let retry = 0; ; retry += 1) {
        attempt += 1;
        const body = withAttempts ? { ...base, deliveryAttempt: attempt } : base;
        const status = await post(target, body, authorizationOf());
        statuses.push(status);
        count(status);
        if ((status >= 200 && status < 300) || retry >= maxRedeliveries) return;
        await sleep(backoffMs * 2 ** retry);
      }
    };
    const concurrent: Promise<void>[] = [];
    for (let i = 0; i < concurrency; i += 1) concurrent.push(chain());
    await Promise.all(concurrent);
    for (let i = concurrency; i < copies; i += 1) await chain();
    return {
      messageId: base.message.messageId,
      statuses,
      acked: statuses.some((s) => s >= 200 && s < 300),
    };
  };

  try {
    const messages = await Promise.all(options.messages.map(runMessage));
    return {
      statusCounts,
      deliveries,
      messages,
      unacked: messages.filter((m) => !m.acked).map((m) => m.messageId),
    };
  } finally {
    if (server) {
      const s = server;
      await new Promise<void>((done) => {
        s.close(() => done());
        s.closeAllConnections();
      });
    }
  }
}
