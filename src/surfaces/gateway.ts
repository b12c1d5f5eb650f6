import { Buffer } from "node:buffer";
import {
  asError,
  Duplicate,
  InProgress,
  InvalidConfiguration,
  type InvalidKey,
  MalformedMessage,
  UnkeyedMessage,
} from "../core/errors.js";
import { errorStack, errorText } from "../core/logger.js";
import { type ResolvedLockOptions, resolveLockOptions } from "../core/options.js";
import type { LockOptions, Logger } from "../core/types.js";
import {
  assertValidKey,
  booleanOption,
  describe,
  functionOption,
  readOptions,
} from "../core/validate.js";
import { runResolved } from "../core/verbs.js";
import {
  type CloudEventLike,
  cloudEventDeliveryAttempt,
  cloudEventMessageId,
  type PubSubMessageLike,
  type PushMessage,
  parsePushBody,
} from "./envelope.js";

/**
 * Options of the three Pub/Sub surfaces: {@link LockOptions} plus how to key a message.
 * `I` is what the key function receives (the CloudEvent, the {@link PushRequest}, or the
 * pull `Message`). The ttl belongs to the backend.
 *
 * @example
 * ```ts
 * import { type CloudEventLike, type GatewayOptions, idempotent, InMemoryLock, parseCloudEvent } from "gcp-pubsub-idempotency";
 *
 * const options: GatewayOptions<CloudEventLike> = {
 *   backend: new InMemoryLock(),
 *   key: (event) => parseCloudEvent(event).attributes.orderId, // a business key
 *   onDuplicate: (key) => console.log("skipped", key),
 * };
 * export const handler = idempotent(options, async () => {});
 * ```
 */
export type GatewayOptions<I> = LockOptions & {
  /**
   * The idempotency key of a message; default its Pub/Sub messageId. Undefined or `""`
   * means unkeyed (refused unless `allowUnguarded`); a throw is a failure (nack).
   */
  key?: (input: I) => string | undefined;
  /** Called with the key when a duplicate was skipped; a throw is logged, never raised. */
  onDuplicate?: (key: string) => void;
  /** Run the handler unguarded (with a warning) when no key resolves, instead of refusing. */
  allowUnguarded?: boolean;
  /** As in {@link LockOptions.waitMs}: ms to keep re-claiming a held key; default 0. */
  waitMs?: number;
};

/**
 * The request headers structure the HTTP surface reads; `node:http`'s `IncomingHttpHeaders`
 * fits it.
 *
 * @example
 * ```ts
 * import type { HeaderBag } from "gcp-pubsub-idempotency";
 *
 * const headers: HeaderBag = { "content-type": "application/json" };
 * ```
 */
export type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The least of a request {@link idempotentHttp} reads: functions-framework, Express and
 * `node:http` requests all fit it.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { idempotentHttp, InMemoryLock, type Req } from "gcp-pubsub-idempotency";
 *
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, async (_message, req: Req) => {
 *   console.log(req.headers?.["user-agent"]);
 * });
 * createServer((req, res) => void handler(req, res)).listen(8080);
 * ```
 */
export interface Req {
  /** Parsed by a body parser (object), raw (Buffer/string), or absent: then the stream is read. */
  body?: unknown;
  /** The request headers. */
  readonly headers?: HeaderBag;
  /** True when the stream was consumed already (and no `body` was left): nothing to read. */
  readonly readableEnded?: boolean;
  /** The body stream, read when `body` is absent (up to `maxBodyBytes`). */
  [Symbol.asyncIterator]?(): AsyncIterator<unknown>;
}

/**
 * The least of a response {@link idempotentHttp} writes: enough to send a status and a
 * short text. Express and `node:http` responses fit it.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock, type Res } from "gcp-pubsub-idempotency";
 *
 * // A handler may answer itself; the gateway then leaves the response alone.
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, async (message, _req, res: Res) => {
 *   res.statusCode = 202;
 *   res.end(message.messageId);
 * });
 * ```
 */
export interface Res {
  /** Set by the gateway unless the response was already sent. */
  statusCode: number;
  /** When true, the gateway sends nothing. */
  readonly headersSent?: boolean;
  /** When true, the gateway sends nothing. */
  readonly writableEnded?: boolean;
  /** Used for the `content-type` of a text answer when present. */
  setHeader?(name: string, value: string): unknown;
  /** Ends the response, with a one-line text or none (204). */
  end(chunk?: string): unknown;
}

/**
 * What the key function of {@link idempotentHttp} receives.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock, type PushRequest } from "gcp-pubsub-idempotency";
 *
 * // Key on a business id carried in an attribute instead of the messageId.
 * const key = ({ message }: PushRequest) => message.attributes.orderId;
 * const handler = idempotentHttp({ backend: new InMemoryLock(), key }, async () => {});
 * ```
 */
export interface PushRequest<Q extends Req = Req> {
  /** The parsed push body. */
  readonly message: PushMessage;
  /** The request it came in. */
  readonly req: Q;
}

/**
 * `idempotentHttp` options: the gateway's plus the body size limit for unparsed requests.
 *
 * @example
 * ```ts
 * import { type HttpGatewayOptions, idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * const options: HttpGatewayOptions = { backend: new InMemoryLock(), maxBodyBytes: 1024 * 1024 };
 * const handler = idempotentHttp(options, async (message) => console.log(message.text()));
 * ```
 */
export type HttpGatewayOptions<Q extends Req = Req> = GatewayOptions<PushRequest<Q>> & {
  /** Largest body read from an unparsed request; default 16 MiB (413 beyond). */
  maxBodyBytes?: number;
};

/**
 * Default `maxBodyBytes` of {@link idempotentHttp}: 16 MiB (16,777,216 bytes), for requests
 * whose body no framework parsed. It admits the largest legal push: Pub/Sub's 10 MB of
 * data is about 13.4 MB as base64 inside the JSON envelope, plus up to 100 attributes and
 * the ordering key. A larger body is answered with 413.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_BODY_BYTES, idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * const handler = idempotentHttp(
 *   { backend: new InMemoryLock(), maxBodyBytes: DEFAULT_MAX_BODY_BYTES / 16 },
 *   async () => {},
 * );
 * ```
 */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

const DISABLED_ENV = "GCP_PUBSUB_IDEMPOTENCY_DISABLED";
let warnedDisabled = false;

/**
 * True when `GCP_PUBSUB_IDEMPOTENCY_DISABLED` is `1`, `true`, `yes` or `on`: the surfaces
 * then run handlers unguarded (one warning) and never touch the store. Read at call time,
 * so a test or an operator can flip it without a restart. Never set it in production.
 *
 * @example
 * ```ts
 * import { gatewayDisabled } from "gcp-pubsub-idempotency";
 *
 * process.env.GCP_PUBSUB_IDEMPOTENCY_DISABLED = "1";
 * console.log(gatewayDisabled()); // true
 * ```
 */
export function gatewayDisabled(): boolean {
  const value = process.env[DISABLED_ENV]?.trim().toLowerCase();
  return value === "1" || value === "true" || value === "yes" || value === "on";
}

function warnDisabledOnce(logger: Logger): void {
  if (warnedDisabled) return;
  warnedDisabled = true;
  logger.warn(`${DISABLED_ENV} is set: the idempotency gateway is a pass-through`, {
    outcome: "disabled",
  });
}

/** Test hook: forget that the disabled warning was written. */
export function resetDisabledWarning(): void {
  warnedDisabled = false;
}

/** A surface's options after one validation pass, made when the function is built. */
interface ResolvedGateway<I> {
  readonly lock: ResolvedLockOptions;
  readonly key: ((input: I) => unknown) | undefined;
  readonly onDuplicate: ((key: string) => unknown) | undefined;
  readonly allowUnguarded: boolean;
}

/**
 * Check every option when the function is built (at deploy), not on the first message (as
 * a nack loop), with the same checks the verbs run. No I/O: the disabled switch must be
 * able to skip the store entirely.
 */
function resolveGateway<I>(
  surface: string,
  options: unknown,
  handler: unknown,
): ResolvedGateway<I> {
  const where = `${surface}()`;
  const lock = resolveLockOptions(where, options);
  if (typeof handler !== "function") {
    throw new InvalidConfiguration(`${where} needs a handler function, got ${describe(handler)}`);
  }
  const o = readOptions(where, options, false, ["key", "onDuplicate", "allowUnguarded"]);
  return {
    lock,
    key: functionOption<(input: I) => unknown>("options.key", o.key),
    onDuplicate: functionOption<(key: string) => unknown>("options.onDuplicate", o.onDuplicate),
    allowUnguarded: booleanOption("options.allowUnguarded", o.allowUnguarded) ?? false,
  };
}

type Outcome =
  | { kind: "ran" }
  | { kind: "duplicate"; key: string }
  | { kind: "in_progress"; error: InProgress }
  | { kind: "unkeyed"; error: UnkeyedMessage }
  | { kind: "invalid_key"; error: InvalidKey }
  | { kind: "failed"; error: unknown; fromBody: boolean };

/**
 * Resolve the key, run the handler under `lock`, and classify what happened, so each
 * surface only maps an outcome to its own ack/nack or status. Never rejects: whatever the
 * handler, the key function, the hook or the logger throws becomes an outcome.
 */
async function guard<I>(
  g: ResolvedGateway<I>,
  input: I,
  defaultKey: () => string | undefined,
  run: () => unknown,
  deliveryAttempt: number | undefined,
): Promise<Outcome> {
  const { logger } = g.lock;
  if (gatewayDisabled()) {
    warnDisabledOnce(logger);
    return runPlain(run);
  }
  let key: unknown;
  try {
    // A key function that throws is a bug in the caller: it propagates (nack), not unkeyed.
    key = g.key ? g.key(input) : defaultKey();
  } catch (error) {
    return { kind: "failed", error: asError("the key function", error), fromBody: false };
  }
  if (key === undefined || key === "") {
    if (!g.allowUnguarded) {
      logger.warn("no idempotency key resolved; refusing the message", { outcome: "unkeyed" });
      return { kind: "unkeyed", error: new UnkeyedMessage() };
    }
    logger.warn("no idempotency key resolved; running the handler unguarded", {
      outcome: "unguarded",
    });
    return runPlain(run);
  }
  try {
    assertValidKey(key);
  } catch (error) {
    // No store can hold it, and no redelivery changes it: refused before the handler.
    const invalid = error as InvalidKey;
    logger.warn("the message's idempotency key is unusable; refusing it", {
      outcome: "invalid_key",
      error: invalid.message,
    });
    return { kind: "invalid_key", error: invalid };
  }

  let bodyThrew = false;
  try {
    await runResolved("lock", key, g.lock, async () => {
      try {
        return await run();
      } catch (error) {
        bodyThrew = true;
        throw error;
      }
    });
    return { kind: "ran" };
  } catch (error) {
    // A Duplicate thrown by the handler itself (a nested lock) is the body's error.
    if (!bodyThrew && error instanceof Duplicate) {
      logger.info("duplicate delivery skipped", { key, outcome: "duplicate" });
      if (g.onDuplicate) callHook(g.onDuplicate, key, logger);
      return { kind: "duplicate", key };
    }
    if (!bodyThrew && error instanceof InProgress) {
      // One line, no stack: contention is expected under redelivery and must not page anyone.
      logger.warn("key held by another delivery; nacking for a later redelivery", {
        key: error.key,
        outcome: "in_progress",
        ...(error.leaseExpiresAt === undefined
          ? {}
          : { leaseExpiresAt: new Date(error.leaseExpiresAt).toISOString() }),
        ...(deliveryAttempt === undefined ? {} : { deliveryAttempt }),
      });
      return { kind: "in_progress", error };
    }
    return {
      kind: "failed",
      error: asError(bodyThrew ? "the handler" : "the gateway", error),
      fromBody: bodyThrew,
    };
  }
}

/** A hook observes: its throw, or its rejected promise, is logged and changes nothing. */
function callHook(hook: (key: string) => unknown, key: string, logger: Logger): void {
  const failed = (hookError: unknown) =>
    logger.error("onDuplicate hook threw; the message is still acked", {
      key,
      outcome: "hook_failed",
      error: errorText(hookError),
    });
  try {
    const result = hook(key);
    if (result instanceof Promise) result.then(undefined, failed);
  } catch (hookError) {
    failed(hookError);
  }
}

async function runPlain(run: () => unknown): Promise<Outcome> {
  try {
    await run();
    return { kind: "ran" };
  } catch (error) {
    return { kind: "failed", error: asError("the handler", error), fromBody: true };
  }
}

/**
 * Wrap a functions-framework `cloudEvent` function. It resolves on success or a
 * duplicate (204, ack) and rejects otherwise (500, nack): a `cloudEvent` function cannot
 * pick its status, so contention is a 500 here — use {@link idempotentHttp} for a 503.
 *
 * @example
 * ```ts
 * import { cloudEvent } from "@google-cloud/functions-framework";
 * import { idempotent, InMemoryLock, parseCloudEvent } from "gcp-pubsub-idempotency";
 *
 * declare function handle(order: unknown): Promise<void>;
 * const backend = new InMemoryLock(); // DatastoreLock in production
 * cloudEvent("orders", idempotent({ backend }, async (event) => handle(parseCloudEvent(event).json())));
 * ```
 */
export function idempotent<E extends CloudEventLike = CloudEventLike>(
  options: GatewayOptions<E>,
  handler: (event: E) => unknown,
): (event: E) => Promise<void> {
  const g = resolveGateway<E>("idempotent", options, handler);
  return async (event) => {
    const outcome = await guard(
      g,
      event,
      () => cloudEventMessageId(event),
      () => handler(event),
      cloudEventDeliveryAttempt(event),
    );
    switch (outcome.kind) {
      case "ran":
      case "duplicate":
        return;
      case "in_progress":
      case "unkeyed":
      case "invalid_key":
        // functions-framework prints err.stack for every throw; contention is routine, so
        // keep that to the message's one line instead of a stack trace.
        trimStack(outcome.error);
        throw outcome.error;
      case "failed":
        // functions-framework logs it; wrapped, a falsy throw is a 500 there, not a 204.
        throw outcome.error;
    }
  };
}

function trimStack(error: Error): void {
  try {
    error.stack = `${error.name}: ${error.message}`;
  } catch {
    // A non-writable stack keeps its lines; the gateway's own warning is still one line.
  }
}

/** Send a status and a one-line text unless a response is already on its way. */
function send(res: Res, status: number, text?: string): void {
  if (res.headersSent || res.writableEnded) return;
  res.statusCode = status;
  if (text === undefined) {
    res.end();
    return;
  }
  res.setHeader?.("content-type", "text/plain; charset=utf-8");
  res.end(`${text}\n`);
}

class BodyTooLarge extends Error {}

/** The push body: as parsed by a framework, or read from the stream under a size limit. */
async function readBody(req: Req, limit: number): Promise<unknown> {
  const { body } = req;
  if (body !== undefined) return body;
  const iterate = req[Symbol.asyncIterator];
  if (typeof iterate !== "function" || req.readableEnded) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  // Keep draining past the limit rather than destroying the stream, so the 413 reaches the client.
  for await (const chunk of req as AsyncIterable<unknown>) {
    const bytes =
      typeof chunk === "string"
        ? Buffer.from(chunk, "utf8")
        : chunk instanceof Uint8Array
          ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
          : Buffer.alloc(0);
    size += bytes.byteLength;
    if (size > limit) tooLarge = true;
    if (!tooLarge) chunks.push(bytes);
  }
  if (tooLarge) throw new BodyTooLarge(`the push body exceeds ${limit} bytes`);
  return Buffer.concat(chunks);
}

/**
 * Wrap a Pub/Sub push endpoint: a functions-framework `http` function, an Express
 * handler, or a `node:http` request listener. Success or duplicate → 204; contention →
 * 503; the handler threw → 500; no key → 400; a malformed push body → 400 with a reason.
 * A handler that sends its own response keeps it.
 *
 * @example
 * ```ts
 * import express from "express";
 * import { idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * declare function handle(order: unknown): Promise<void>;
 * const backend = new InMemoryLock(); // RedisLock, SqlLock, … in production
 * const app = express();
 * app.post("/push", express.json(), idempotentHttp({ backend }, async (message) => handle(message.json())));
 * app.listen(8080);
 * ```
 */
export function idempotentHttp<Q extends Req = Req, S extends Res = Res>(
  options: HttpGatewayOptions<Q>,
  handler: (message: PushMessage, req: Q, res: S) => unknown,
): (req: Q, res: S) => Promise<void> {
  const g = resolveGateway<PushRequest<Q>>("idempotentHttp", options, handler);
  const limit = maxBodyBytesOption(
    readOptions("idempotentHttp()", options, false, ["maxBodyBytes"]).maxBodyBytes,
  );
  const { logger } = g.lock;
  const serve = async (req: Q, res: S): Promise<void> => {
    let message: PushMessage;
    try {
      message = parsePushBody(await readBody(req, limit));
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        logger.warn(error.message, { outcome: "too_large" });
        send(res, 413, error.message);
        return;
      }
      const reason = error instanceof MalformedMessage ? error.message : errorText(error);
      logger.warn(reason, { outcome: "malformed" });
      send(res, 400, oneLine(reason));
      return;
    }
    const outcome = await guard(
      g,
      { message, req },
      () => message.messageId,
      () => handler(message, req, res),
      message.deliveryAttempt,
    );
    switch (outcome.kind) {
      case "ran":
      case "duplicate":
        send(res, 204);
        return;
      case "in_progress":
        send(res, 503, outcome.error.message);
        return;
      case "unkeyed":
      case "invalid_key":
        send(res, 400, oneLine(outcome.error.message));
        return;
      case "failed":
        logFailure(logger, outcome, message.messageId);
        // The reason stays in the log: a 500 body must not leak internals to the caller.
        send(res, 500, "the handler failed; the message will be redelivered");
        return;
    }
  };
  return async (req, res) => {
    try {
      await serve(req, res);
    } catch (error) {
      // Only a broken request or response object lands here; a server must not crash on it.
      logger.error("answering the push failed", { outcome: "failed", error: errorText(error) });
      try {
        send(res, 500, "the push could not be answered");
      } catch {
        // The response is beyond saving; the missing answer is a nack to Pub/Sub.
      }
    }
  };
}

function maxBodyBytesOption(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_BODY_BYTES;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidConfiguration(
      `options.maxBodyBytes must be a positive whole number of bytes, got ${describe(value)}`,
    );
  }
  return value;
}

function stackField(error: unknown): { stack?: string } {
  const stack = errorStack(error);
  return stack === undefined ? {} : { stack };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").slice(0, 300);
}

function logFailure(
  logger: Logger,
  outcome: { error: unknown; fromBody: boolean },
  messageId: string,
): void {
  logger.error(
    outcome.fromBody ? "the handler threw; nacking" : "the gateway failed before the handler",
    {
      messageId,
      outcome: "failed",
      error: errorText(outcome.error),
      ...stackField(outcome.error),
    },
  );
}

/**
 * Wrap a pull subscriber's `message` listener. Acks on success or duplicate; nacks on
 * contention, a handler error or no key. Never rejects: `subscription.on("message")`
 * ignores promises, so every failure is logged instead.
 *
 * Note: `nack()` redelivers at once unless the subscription has a retry policy; give
 * it one so contention does not spin.
 *
 * @example
 * ```ts
 * import { PubSub } from "@google-cloud/pubsub";
 * import { idempotentMessage, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * declare function handle(data: Buffer): Promise<void>;
 * const backend = new InMemoryLock(); // a shared backend when several workers pull
 * const subscription = new PubSub().subscription("orders-worker");
 * subscription.on("message", idempotentMessage({ backend }, async (message) => handle(message.data)));
 * ```
 */
export function idempotentMessage<M extends PubSubMessageLike = PubSubMessageLike>(
  options: GatewayOptions<M>,
  handler: (message: M) => unknown,
): (message: M) => Promise<void> {
  const g = resolveGateway<M>("idempotentMessage", options, handler);
  const { logger } = g.lock;
  return async (message) => {
    let messageId = "";
    let settle: "ack" | "nack" = "nack";
    try {
      const id = message.id;
      messageId = typeof id === "string" ? id : "";
      const attempt = message.deliveryAttempt;
      const outcome = await guard(
        g,
        message,
        () => (typeof id === "string" ? id : undefined),
        () => handler(message),
        typeof attempt === "number" && Number.isInteger(attempt) ? attempt : undefined,
      );
      if (outcome.kind === "ran" || outcome.kind === "duplicate") settle = "ack";
      if (outcome.kind === "failed") logFailure(logger, outcome, messageId);
    } catch (error) {
      // A message whose fields cannot be read: nack it, never leave it leased.
      logger.error("reading the message failed; nacking", {
        messageId,
        outcome: "failed",
        error: errorText(error),
      });
    }
    try {
      if (settle === "ack") message.ack();
      else message.nack();
    } catch (error) {
      // An unhandled rejection would crash the worker; the lease expiry redelivers it.
      logger.error("settling the message failed", {
        messageId,
        outcome: "settle_failed",
        error: errorText(error),
      });
    }
  };
}
