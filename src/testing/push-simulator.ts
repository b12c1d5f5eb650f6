import { Buffer } from "node:buffer";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A payload: bytes and strings go as they are, anything else as JSON. */
export type Payload = Buffer | Uint8Array | string | number | boolean | object | null;

export interface MessageFields {
  messageId?: string;
  attributes?: Record<string, string>;
  publishTime?: string;
  orderingKey?: string;
  subscription?: string;
  deliveryAttempt?: number;
  /** Also send `message_id`/`publish_time`, as the real service and the emulator do. */
  snakeCase?: boolean;
}

let counter = 0;
/** A fresh message id; numeric-looking like the service's, unique within the process. */
export function nextMessageId(): string {
  counter += 1;
  return `${Date.now()}${String(counter).padStart(6, "0")}`;
}

export function payloadBytes(payload: Payload): Buffer {
  if (Buffer.isBuffer(payload)) return payload;
  if (payload instanceof Uint8Array) return Buffer.from(payload);
  if (typeof payload === "string") return Buffer.from(payload, "utf8");
  return Buffer.from(JSON.stringify(payload), "utf8");
}

const DEFAULT_SUBSCRIPTION = "projects/test-project/subscriptions/test-sub";
const DEFAULT_TOPIC = "projects/test-project/topics/test-topic";

function messageObject(payload: Payload, fields: MessageFields, messageId: string) {
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

/** A raw push request body, as a push subscription POSTs it. */
export function pushBody(payload: Payload, fields: MessageFields = {}) {
  const messageId = fields.messageId ?? nextMessageId();
  return {
    message: messageObject(payload, fields, messageId),
    subscription: fields.subscription ?? DEFAULT_SUBSCRIPTION,
    ...(fields.deliveryAttempt === undefined ? {} : { deliveryAttempt: fields.deliveryAttempt }),
  };
}

/** A structured-mode `messagePublished` CloudEvent (the JSON body of the request). */
export function structuredCloudEvent(payload: Payload, fields: MessageFields = {}) {
  const messageId = fields.messageId ?? nextMessageId();
  const body = pushBody(payload, { ...fields, messageId });
  return {
    specversion: "1.0",
    id: messageId,
    type: "google.cloud.pubsub.topic.v1.messagePublished",
    source: `//pubsub.googleapis.com/${DEFAULT_TOPIC}`,
    time: body.message.publishTime,
    datacontenttype: "application/json",
    data: body,
  };
}

/** A binary-mode `messagePublished` CloudEvent: `ce-*` headers and the data as the body. */
export function binaryCloudEvent(payload: Payload, fields: MessageFields = {}) {
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

/** A fake `@google-cloud/pubsub` `Message` that records how it was settled. */
export interface FakeMessage {
  readonly id: string;
  readonly data: Buffer;
  readonly attributes: Record<string, string>;
  readonly publishTime: Date;
  readonly orderingKey?: string;
  readonly deliveryAttempt?: number;
  /** Every ack()/nack() call in order. */
  readonly settlements: ("ack" | "nack")[];
  ack(): void;
  nack(): void;
}

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

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => unknown;

export interface SimulateOptions {
  /** The push endpoint; or give `handler` and a local server is started on port 0. */
  url?: string;
  handler?: RequestListener;
  /** Payloads (each becomes a message with a fresh id) or push bodies from {@link pushBody}. */
  messages: readonly (Payload | ReturnType<typeof pushBody>)[];
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
}

export interface MessageReport {
  readonly messageId: string;
  readonly statuses: number[];
  /** True when at least one delivery got a 2xx. */
  readonly acked: boolean;
}

export interface SimulationReport {
  /** Count of responses per HTTP status; network errors count under 0. */
  readonly statusCounts: Record<number, number>;
  readonly deliveries: number;
  readonly messages: MessageReport[];
  /** Message ids that never got a 2xx. */
  readonly unacked: string[];
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function isPushBody(value: unknown): value is ReturnType<typeof pushBody> {
  if (value === null || typeof value !== "object" || Buffer.isBuffer(value)) return false;
  const message = (value as { message?: unknown }).message;
  return (
    message !== null &&
    typeof message === "object" &&
    typeof (message as { messageId?: unknown }).messageId === "string"
  );
}

async function post(url: string, body: unknown): Promise<number> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
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
 * of the statuses seen.
 */
export async function simulatePushDeliveries(options: SimulateOptions): Promise<SimulationReport> {
  const copies = options.copies ?? 3;
  const concurrency = Math.max(1, Math.min(options.concurrency ?? 2, copies));
  const maxRedeliveries = options.maxRedeliveries ?? 5;
  const backoffMs = options.backoffMs ?? 20;
  const withAttempts = options.deliveryAttempts ?? true;

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

  const runMessage = async (input: Payload | ReturnType<typeof pushBody>) => {
    const base = isPushBody(input) ? input : pushBody(input as Payload);
    const statuses: number[] = [];
    let attempt = 0;
    // Each copy is an independent delivery chain that retries its own nacks.
    const chain = async () => {
      for (let retry = 0; ; retry += 1) {
        attempt += 1;
        const body = withAttempts ? { ...base, deliveryAttempt: attempt } : base;
        const status = await post(target, body);
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
