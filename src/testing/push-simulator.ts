// The push simulator: delivers messages to an endpoint the way Pub/Sub pushes them (copies,
// concurrency, redelivery of what was not acked) and reports what each delivery was answered.
import { Buffer } from "node:buffer";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { InvalidConfiguration } from "../core/errors.js";
import { parsePushRequest } from "../surfaces/formats/push-request.js";
import { type MessageFields, type Payload, type PushBody, pushBody } from "./messages.js";
import type { createTestIdentity } from "./push-auth.js";
import {
  cloudEventRequest,
  jsonRequest,
  type PushFormat,
  type PushHttpRequest,
  pushRequest,
} from "./push-requests.js";
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
  /**
   * With `handler`: the path the deliveries are posted to, for a handler that routes (an
   * express app with `app.post("/pubsub/push", …)`); default `"/"`. Must begin with `/`. With
   * `url`, put the path in the url. A handler that answers every delivery 404 serves another
   * route: the run then throws an InvalidConfiguration naming the path.
   */
  path?: string;
  /** Payloads (each becomes a message with a fresh id) or push bodies from {@link pushBody}. */
  messages?: readonly (Payload | PushBody)[];
  /** How `messages` are sent; default `wrapped`, the push body. */
  format?: PushFormat;
  /**
   * Requests sent as they are, e.g. from {@link cloudEventRequest} or {@link pushRequest}; each
   * is one message, delivered `copies` times and redelivered like the others. Default none.
   */
  requests?: readonly PushHttpRequest[];
  /** Deliveries of each message that Pub/Sub makes regardless of acks; default 3. */
  copies?: number;
  /** How many of those copies go at the same moment; default 2. The rest follow one by one. */
  concurrency?: number;
  /** Redeliveries after a non-2xx (like a retry policy); default 5. */
  maxRedeliveries?: number;
  /** Backoff before the n-th redelivery: `backoffMs * 2^(n-1)`; default 20. */
  backoffMs?: number;
  /**
   * Send `deliveryAttempt` in the envelope (as with a dead-letter policy); default true. Only
   * formats with a push body carry it: Pub/Sub writes none for an unwrapped push.
   */
  deliveryAttempts?: boolean;
  /**
   * A dead-letter policy's max delivery attempts (5 to 100, as Pub/Sub allows): a message whose
   * delivery numbered this or higher is not acked is dead-lettered, and no chain delivers it
   * again. Pub/Sub counts attempts with or without `deliveryAttempts`. Default: no policy.
   */
  maxDeliveryAttempts?: number;
  /**
   * The `Authorization` header of each delivery, as an authenticated push subscription sends
   * it; a function is called per delivery (e.g. `() => identity.authorization()` with a
   * {@link createTestIdentity} identity, or `identity.forge(kind)`, undefined for `missing`).
   * Default: none.
   */
  authorization?: string | (() => string | undefined) | undefined;
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
  /**
   * The message id every delivery of it carried; for a request of `requests` that carries
   * none (a CloudEvent that is no Pub/Sub message), the event id; "" when it has neither.
   */
  readonly messageId: string;
  /** The HTTP status of each delivery, in the order the responses came; 0 for a network error. */
  readonly statuses: number[];
  /** True when at least one delivery got a 2xx. */
  readonly acked: boolean;
  /** True when `maxDeliveryAttempts` was given and a delivery at or past it was not acked. */
  readonly deadLettered: boolean;
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
  /** One report per message, in the order of `options.messages`, then of `options.requests`. */
  readonly messages: MessageReport[];
  /** Message ids that never got a 2xx. */
  readonly unacked: string[];
  /** Message ids the dead-letter policy (`maxDeliveryAttempts`) took. */
  readonly deadLettered: string[];
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** What a prebuilt request is reported by: its messageId, else its event id, else "". */
function requestId(request: PushHttpRequest): string {
  try {
    const message = parsePushRequest(request, request.body);
    return message.messageId || message.event?.id || "";
  } catch {
    return ""; // a malformed request on purpose: the endpoint's answer is what counts
  }
}

function isPushBody(value: unknown): value is PushBody {
  if (value === null || typeof value !== "object" || Buffer.isBuffer(value)) return false;
  const message = (value as { message?: unknown }).message;
  return (
    message !== null &&
    typeof message === "object" &&
    typeof (message as { messageId?: unknown }).messageId === "string"
  );
}

/** The path of a handler run: `options.path` checked, "/" by default. */
function routePath(options: SimulateOptions): string {
  const { path } = options;
  if (path === undefined) return "/";
  if (options.url !== undefined) {
    throw new InvalidConfiguration(
      `simulatePushDeliveries takes path with handler only: put the path in url instead (got url ${JSON.stringify(options.url)} and path ${JSON.stringify(path)})`,
    );
  }
  // One absolute path on the local server: no scheme or host, no "//", no whitespace.
  if (typeof path !== "string" || !/^\/(?!\/)[\x21-\x7e]*$/.test(path)) {
    throw new InvalidConfiguration(
      `simulatePushDeliveries path must be a path beginning with "/" (e.g. "/pubsub/push"), got ${JSON.stringify(path)}`,
    );
  }
  return path;
}

async function post(
  url: string,
  request: PushHttpRequest,
  authorization?: string,
): Promise<number> {
  try {
    const headers = { ...request.headers };
    if (authorization !== undefined) headers.authorization = authorization;
    const response = await fetch(url, { method: "POST", headers, body: request.body });
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
  const deadLetterAt = options.maxDeliveryAttempts ?? Number.POSITIVE_INFINITY;
  if (
    deadLetterAt !== Number.POSITIVE_INFINITY &&
    !(Number.isSafeInteger(deadLetterAt) && deadLetterAt >= 5 && deadLetterAt <= 100)
  ) {
    throw new InvalidConfiguration(
      `simulatePushDeliveries maxDeliveryAttempts must be an integer from 5 to 100 (a dead-letter policy's bounds), got ${String(deadLetterAt)}`,
    );
  }
  const { authorization } = options;
  const authorizationOf = typeof authorization === "function" ? authorization : () => authorization;

  const path = routePath(options);
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
    url = `http://127.0.0.1:${port}${path}`;
  }
  const target = url;

  const statusCounts: Record<number, number> = {};
  let deliveries = 0;
  const count = (status: number) => {
    statusCounts[status] = (statusCounts[status] ?? 0) + 1;
    deliveries += 1;
  };

  const format = options.format ?? "wrapped";
  /** The message id a message goes by, and its request at each delivery attempt. */
  const deliveriesOf = (
    input: Payload | PushBody,
  ): { messageId: string; request: (attempt: number) => PushHttpRequest } => {
    const base = isPushBody(input) ? input : pushBody(input as Payload);
    const { message } = base;
    const fields: MessageFields = {
      messageId: message.messageId,
      attributes: message.attributes,
      publishTime: message.publishTime,
      subscription: base.subscription,
      ...(message.orderingKey === undefined ? {} : { orderingKey: message.orderingKey }),
    };
    const data = Buffer.from(message.data, "base64");
    return {
      messageId: message.messageId,
      request: (attempt) => {
        if (format === "wrapped") {
          const body = withAttempts ? { ...base, deliveryAttempt: attempt } : base;
          return jsonRequest("application/json", body);
        }
        const attempted = withAttempts ? { ...fields, deliveryAttempt: attempt } : fields;
        return pushRequest(data, attempted, format);
      },
    };
  };

  const runMessage = async (delivery: {
    messageId: string;
    request: (attempt: number) => PushHttpRequest;
  }) => {
    const statuses: number[] = [];
    let attempt = 0;
    let deadLettered = false;
    // Each copy is an independent delivery chain that retries its own nacks; the attempt
    // count is the message's, as Pub/Sub keeps it.
    const chain = async () => {
      for (let retry = 0; !deadLettered; retry += 1) {
        attempt += 1;
        const numbered = attempt;
        const status = await post(target, delivery.request(numbered), authorizationOf());
        statuses.push(status);
        count(status);
        if (status >= 200 && status < 300) return;
        if (numbered >= deadLetterAt) deadLettered = true;
        if (deadLettered || retry >= maxRedeliveries) return;
        await sleep(backoffMs * 2 ** retry);
      }
    };
    const concurrent: Promise<void>[] = [];
    for (let i = 0; i < concurrency; i += 1) concurrent.push(chain());
    await Promise.all(concurrent);
    for (let i = concurrency; i < copies; i += 1) await chain();
    return {
      messageId: delivery.messageId,
      statuses,
      acked: statuses.some((s) => s >= 200 && s < 300),
      deadLettered,
    };
  };

  try {
    const asIs = (request: PushHttpRequest) => ({
      messageId: requestId(request),
      request: () => request,
    });
    const messages = await Promise.all([
      ...(options.messages ?? []).map((input) => runMessage(deliveriesOf(input))),
      ...(options.requests ?? []).map((request) => runMessage(asIs(request))),
    ]);
    if (server && deliveries > 0 && statusCounts[404] === deliveries) {
      // idempotentHttp never answers 404: a handler that answers it to every delivery routes.
      throw new InvalidConfiguration(
        `simulatePushDeliveries posted to ${JSON.stringify(path)} (${target}) and the handler answered 404 to every delivery (${deliveries}): it serves another route. Pass the path it serves, e.g. path: "/pubsub/push"`,
      );
    }
    return {
      statusCounts,
      deliveries,
      messages,
      unacked: messages.filter((m) => !m.acked).map((m) => m.messageId),
      deadLettered: messages.filter((m) => m.deadLettered).map((m) => m.messageId),
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
