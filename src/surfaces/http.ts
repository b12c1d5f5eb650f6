// The HTTP push surface: read the push body (parsed by a framework, or from the stream under
// a size limit), parse it, deliver it, and answer with a status Pub/Sub understands. Over 350
// lines because the request and response shapes it accepts are declared here with it; the
// format parsing, auth and deadlines it calls live in their own files.
import { Buffer } from "node:buffer";
import { InvalidConfiguration, MalformedMessage } from "../core/errors.js";
import { deliveryFields, errorText, type MessageRef } from "../core/logger.js";
import { PUBSUB_TRACEPARENT_ATTRIBUTE, readQuietly } from "../core/trace-context.js";
import { describe, readOptions } from "../core/validate.js";
import { type RequestTimeoutOptions, watchClient } from "./deadline.js";
import type { ParsedMessage } from "./envelope.js";
import {
  deliver,
  type GatewayOptions,
  heldText,
  logFailure,
  resolveGatewayOptions,
  type TransactionalGatewayOptions,
} from "./pipeline.js";
import { type PushAuthOptions, resolvePushAuthOptions, verifierFor } from "./push-auth.js";
import {
  defaultMessageKey,
  type HttpHeadersLike,
  missingKeyReason,
  type PushFormat,
  READ_AS,
  readPushRequest,
  salvagedRef,
} from "./push-formats.js";

/**
 * The least of a request {@link idempotentHttp} reads: functions-framework, Express and
 * `node:http` requests all fit it.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { type HttpRequestLike, idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * const handler = idempotentHttp(
 *   { backend: new InMemoryLock() },
 *   async (_message, req: HttpRequestLike) => {
 *     console.log(req.headers?.["user-agent"]);
 *   },
 * );
 * createServer((req, res) => void handler(req, res)).listen(8080);
 * ```
 */
export interface HttpRequestLike {
  /** Parsed by a body parser (object), raw (Buffer/string), or absent: then the stream is read. */
  body?: unknown;
  /** The body's bytes as functions-framework keeps them beside the parsed `body`; read first. */
  readonly rawBody?: unknown;
  /** The request headers: they tell an unwrapped push or a CloudEvent from a push body. */
  readonly headers?: HttpHeadersLike;
  /** True when the stream was consumed already (and no `body` was left): nothing to read. */
  readonly readableEnded?: boolean;
  /** The body stream, read when `body` is absent (up to `maxBodyBytes`). */
  [Symbol.asyncIterator]?(): AsyncIterator<unknown>;
  /** When present (`node:http`), `aborted` tells of a client that left mid-request. */
  once?(event: string, listener: () => void): unknown;
}

/**
 * The least of a response {@link idempotentHttp} writes: enough to send a status and a
 * short text. Express and `node:http` responses fit it.
 *
 * @example
 * ```ts
 * import { type HttpResponseLike, idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * // A handler may answer itself; the gateway then leaves the response alone.
 * const handler = idempotentHttp(
 *   { backend: new InMemoryLock() },
 *   async (message, _req, res: HttpResponseLike) => {
 *     res.statusCode = 202;
 *     res.end(message.messageId);
 *   },
 * );
 * ```
 */
export interface HttpResponseLike {
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
  /** When present (`node:http`), `close` before `end()` tells of a client that went away. */
  once?(event: string, listener: () => void): unknown;
}

/**
 * The request type under the name the design fixes for {@link idempotentHttp}'s signature:
 * the same type as {@link HttpRequestLike}, kept so both names keep working.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock, type Req } from "gcp-pubsub-idempotency";
 *
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, async (_message, req: Req) => {
 *   console.log(req.headers?.["content-type"]);
 * });
 * ```
 */
export type Req = HttpRequestLike;

/**
 * The response type under the name the design fixes for {@link idempotentHttp}'s signature:
 * the same type as {@link HttpResponseLike}, kept so both names keep working.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock, type Res } from "gcp-pubsub-idempotency";
 *
 * const handler = idempotentHttp({ backend: new InMemoryLock() }, async (_message, _req, res: Res) => {
 *   res.statusCode = 202;
 *   res.end();
 * });
 * ```
 */
export type Res = HttpResponseLike;

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
export interface PushRequest<Q extends HttpRequestLike = HttpRequestLike> {
  /** The parsed push, whichever format it came in. */
  readonly message: ParsedMessage;
  /** The request it came in. */
  readonly req: Q;
}

/**
 * `idempotentHttp` options: the gateway's, the request timeout, and the body size limit
 * for unparsed requests.
 *
 * @example
 * ```ts
 * import { type HttpGatewayOptions, idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * const options: HttpGatewayOptions = { backend: new InMemoryLock(), maxBodyBytes: 1024 * 1024 };
 * const handler = idempotentHttp(options, async (message) => console.log(message.text()));
 * ```
 */
export type HttpGatewayOptions<Q extends HttpRequestLike = HttpRequestLike> = GatewayOptions<
  PushRequest<Q>
> &
  RequestTimeoutOptions & {
    /** Largest body read from an unparsed request; default 16 MiB (413 beyond). */
    maxBodyBytes?: number | undefined;
    /**
     * Verify the OIDC token Pub/Sub signs each authenticated push with, before the body is
     * read: 401 (`WWW-Authenticate: Bearer`) for a missing or invalid token, 403 for a valid
     * token of an identity not in `serviceAccountEmail`, 503 when the certificates cannot be
     * had. A refused push never reaches the key, the store or the handler. Needs the optional
     * peer google-auth-library: when it is not installed, one ERROR line says so (with
     * `npm install google-auth-library`) as the function is built, and every push gets 503.
     */
    auth?: PushAuthOptions | undefined;
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

/** What {@link idempotentHttp} takes besides the options of every surface. */
const HTTP_OPTIONS = ["maxBodyBytes", "auth"] as const;

// The plain overload comes last: when no overload matches, TypeScript (7 in particular)
// reports the last one, and a misspelt option should read as itself ("'lease' does not
// exist … Did you mean 'leaseMs'?"), not as a backend missing completeInTransaction.
/**
 * Transaction mode (`transaction: true`, see {@link TransactionalGatewayOptions}): the
 * handler gets the store's transaction second, then the request and the signal, and the
 * message's DONE commits in that transaction with the handler's writes. No response object:
 * the gateway answers after the commit (204, or 500 when it failed), since an answer sent
 * from inside the transaction would ack a message whose writes may still roll back.
 *
 * @example
 * ```ts
 * import express from "express";
 * import pg from "pg";
 * import { idempotentHttp } from "gcp-pubsub-idempotency";
 * import { SqlLock } from "gcp-pubsub-idempotency/sql";
 *
 * const backend = new SqlLock({ client: new pg.Pool(), table: "app.idempotency_records" });
 * const app = express();
 * app.post("/push", express.json(), idempotentHttp({ backend, transaction: true }, async (message, tx) => {
 *   await tx.query("INSERT INTO app.orders (body) VALUES ($1)", [message.text()]);
 * }));
 * ```
 */
export function idempotentHttp<
  Q extends HttpRequestLike = HttpRequestLike,
  S extends HttpResponseLike = HttpResponseLike,
  Tx = unknown,
>(
  options: TransactionalGatewayOptions<HttpGatewayOptions<Q>, Tx>,
  handler: (message: ParsedMessage, tx: Tx, req: Q, signal: AbortSignal) => unknown,
): (req: Q, res: S) => Promise<void>;
/**
 * Wrap a Pub/Sub push endpoint: a functions-framework `http` function, an Express
 * handler, or a `node:http` request listener. Success or duplicate → 204; contention →
 * 503; the handler threw → 500; no key → 400; a malformed push body → 400 with a reason.
 * A handler that sends its own response keeps it.
 *
 * It reads every push format ({@link parsePushRequest}): a wrapped push, an unwrapped push
 * (keyed by its `x-goog-pubsub-message-id` header; without write-metadata only a `key` option
 * can key it), and CloudEvents over HTTP from Eventarc in binary or structured mode (a Pub/Sub
 * event keyed by its messageId, any other by its source and id: {@link defaultMessageKey}).
 *
 * The handler's `signal` aborts when the client gives up before the answer (Pub/Sub at
 * the ack deadline, the platform at the request timeout: the connection closes), with one
 * WARNING line, and when a heartbeat finds the claim taken over. A handler that rejects on
 * it releases the claim and the redelivery runs; one that finishes anyway completes it.
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
export function idempotentHttp<
  Q extends HttpRequestLike = HttpRequestLike,
  S extends HttpResponseLike = HttpResponseLike,
>(
  options: HttpGatewayOptions<Q>,
  handler: (message: ParsedMessage, req: Q, res: S, signal: AbortSignal) => unknown,
): (req: Q, res: S) => Promise<void>;
export function idempotentHttp<Q extends HttpRequestLike, S extends HttpResponseLike, Tx>(
  options: HttpGatewayOptions<Q> | TransactionalGatewayOptions<HttpGatewayOptions<Q>, Tx>,
  handler:
    | ((message: ParsedMessage, req: Q, res: S, signal: AbortSignal) => unknown)
    | ((message: ParsedMessage, tx: Tx, req: Q, signal: AbortSignal) => unknown),
): (req: Q, res: S) => Promise<void> {
  const gateway = resolveGatewayOptions<PushRequest<Q>>("idempotentHttp", options, handler, {
    signalAt: 3,
    transactionSignalAt: 3,
    request: true,
    own: HTTP_OPTIONS,
  });
  // Which signature `handler` has is what the options said: checked once, above.
  type Plain = (message: ParsedMessage, req: Q, res: S, signal: AbortSignal) => unknown;
  type InTransaction = (
    message: ParsedMessage,
    tx: unknown,
    req: Q,
    signal: AbortSignal,
  ) => unknown;
  const call = gateway.transactional
    ? (message: ParsedMessage, req: Q, _res: S, signal: AbortSignal, tx: unknown) =>
        (handler as InTransaction)(message, tx, req, signal)
    : (message: ParsedMessage, req: Q, res: S, signal: AbortSignal) =>
        (handler as Plain)(message, req, res, signal);
  const own = readOptions("idempotentHttp()", options, false, HTTP_OPTIONS, false);
  const limit = maxBodyBytesOption(own.maxBodyBytes);
  const { logger } = gateway.lock;
  const verify =
    own.auth === undefined
      ? undefined
      : verifierFor(resolvePushAuthOptions(own.auth, "idempotentHttp() options.auth"), {
          logger,
        });
  // One async function a push, with the guard against broken request objects inside it.
  return async (req, res) => {
    let about: MessageRef | undefined;
    try {
      const startedAt = Date.now();
      const client = watchClient(req, res, startedAt, logger);
      if (verify !== undefined) {
        // The verifier logs each refusal once, with the reason; the caller learns only the kind.
        const verdict = await verify(authorizationHeader(req));
        if (!verdict.ok) {
          for (const [name, value] of Object.entries(verdict.headers)) res.setHeader?.(name, value);
          send(res, verdict.status, REFUSAL_TEXT[verdict.status]);
          return;
        }
      }
      let message: ParsedMessage;
      let format: PushFormat;
      let body: unknown;
      try {
        // A body a framework already holds is parsed at once; only a stream is awaited.
        body = heldBody(req);
        if (body === UNREAD) body = await readStream(req, limit);
        ({ message, format } = readPushRequest(req, body));
      } catch (error) {
        if (error instanceof BodyTooLarge) {
          logger.warn(
            error.message,
            deliveryFields("too_large", undefined, salvagedRef(req, undefined), error.message),
          );
          send(res, 413, error.message);
          return;
        }
        const reason = oneLine(
          error instanceof MalformedMessage ? error.message : errorText(error),
        );
        logger.warn(
          "malformed push; answering 400",
          deliveryFields("malformed", undefined, salvagedRef(req, body), reason),
        );
        send(res, 400, reason);
        return;
      }
      const delivery = {
        messageId: message.messageId || message.event?.id,
        subscription: message.subscription,
        deliveryAttempt: message.deliveryAttempt,
        input: { message, req },
        defaultKey: () => defaultMessageKey(message),
        noDefaultKey: () => missingKeyReason(message, format),
        readAs: READ_AS[format],
        run: (signal: AbortSignal, tx: unknown) => call(message, req, res, signal, tx),
        startedAt,
        clientGone: client?.signal,
        carrier: () => ({
          traceparents: [
            readQuietly(req.headers, "traceparent"),
            readQuietly(message.attributes, PUBSUB_TRACEPARENT_ATTRIBUTE),
            readQuietly(message.event?.extensions, "traceparent"),
          ],
        }),
      };
      about = delivery;
      if (client) client.about = delivery;
      const outcome = await deliver(gateway, delivery);
      switch (outcome.kind) {
        case "ran":
        case "duplicate":
          send(res, 204);
          return;
        case "in_progress":
          send(res, 503, heldText(outcome));
          return;
        case "unkeyed":
          send(res, 400, oneLine(outcome.error.message));
          return;
        case "invalid_key":
          send(res, 400, oneLine(outcome.error.message));
          return;
        case "failed":
          logFailure(logger, outcome, delivery);
          // The reason stays in the log: a 500 body must not leak internals to the caller.
          send(res, 500, "the handler failed; the message will be redelivered");
          return;
      }
    } catch (error) {
      // Only a broken request or response object lands here; a server must not crash on it.
      logger.error(
        "answering the push failed",
        deliveryFields("failed", undefined, about, errorText(error)),
      );
      try {
        send(res, 500, "the push could not be answered");
      } catch {
        // The response is beyond saving; the missing answer is a nack to Pub/Sub.
      }
    }
  };
}

const REFUSAL_TEXT = {
  401: "the push is not authenticated",
  403: "the push identity is not allowed",
  503: "the push could not be authenticated now; retry",
} as const;

/** The one Authorization value; a repeated header is never a valid token, so it is refused. */
function authorizationHeader(req: HttpRequestLike): string | undefined {
  const value = req.headers?.authorization;
  if (value === undefined || typeof value === "string") return value;
  return "";
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

class BodyTooLarge extends Error {}

function isEmptyPlainObject(value: unknown): boolean {
  return (
    value !== null &&
    typeof value === "object" &&
    Object.getPrototypeOf(value) === Object.prototype &&
    Object.keys(value).length === 0
  );
}

/** {@link heldBody}'s answer when the body is still in the request's stream. */
const UNREAD: unique symbol = Symbol("unread");

/**
 * The push body a framework already holds: the bytes it kept (`rawBody`) or what it parsed;
 * {@link UNREAD} when it is still in the stream.
 */
function heldBody(req: HttpRequestLike): unknown {
  const { rawBody, body } = req;
  if (rawBody instanceof Uint8Array) return rawBody;
  const iterate = req[Symbol.asyncIterator];
  const unread = typeof iterate === "function" && !req.readableEnded;
  // Express 4's body parsers leave `{}` on a request whose content type they skip, with the
  // stream unread: the data is still in the stream.
  if (body !== undefined && !(unread && isEmptyPlainObject(body))) return body;
  return unread ? UNREAD : undefined;
}

/** The body read from the request's stream, under a size limit. */
async function readStream(req: HttpRequestLike, limit: number): Promise<Buffer> {
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

/** Send a status and a one-line text unless a response is already on its way. */
function send(res: HttpResponseLike, status: number, text?: string): void {
  if (res.headersSent || res.writableEnded) return;
  res.statusCode = status;
  if (text === undefined) {
    res.end();
    return;
  }
  res.setHeader?.("content-type", "text/plain; charset=utf-8");
  res.end(`${text}\n`);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").slice(0, 300);
}
