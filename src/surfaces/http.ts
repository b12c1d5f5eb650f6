// The HTTP push surface: authenticate the push (when asked), read and parse its body, deliver
// it, and answer with a status Pub/Sub understands. The types it reads and writes are in
// http-types.ts, the body reading in http-body.ts, the push formats in formats/.
import { heldText } from "../core/engine/outcome.js";
import { MalformedMessage, payloadMismatchText } from "../core/errors.js";
import { deliveryFields, errorText, type MessageRef } from "../core/logger.js";
import { PUBSUB_TRACEPARENT_ATTRIBUTE } from "../core/trace-context.js";
import { readOptions } from "../core/validate.js";
import { watchClient } from "./deadline.js";
import { logFailure } from "./delivery-outcome.js";
import { defaultMessageKey, missingKeyReason } from "./formats/default-keys.js";
import { readQuietly } from "./formats/fields.js";
import type { ParsedMessage } from "./formats/parsed-message.js";
import { type CheckedEnvelope, envelopeMessage } from "./formats/push-envelope.js";
import { type PushFormat, READ_AS } from "./formats/push-format.js";
import { type PushRead, readPushRequest } from "./formats/push-request.js";
import { salvagedRef } from "./formats/salvaged-ref.js";
import {
  buildGateway,
  type Delivery,
  type SurfaceSpec,
  type TransactionalGatewayOptions,
} from "./gateway.js";
import { BodyTooLarge, heldBody, maxBodyBytesOption, readStream, UNREAD } from "./http-body.js";
import type {
  HttpGatewayOptions,
  HttpRequestLike,
  HttpResponseLike,
  PushRequest,
} from "./http-types.js";
import { deliver } from "./pipeline.js";
import { resolvePushAuthOptions } from "./push-auth/options.js";
import { verifierFor } from "./push-auth/verifier.js";

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
  const gateway = buildGateway(
    HTTP as SurfaceSpec<HttpDelivery<Q, S>, PushRequest<Q>>,
    options,
    handler,
  );
  const own = readOptions("idempotentHttp()", options, false, HTTP_OPTIONS, false);
  const limit = maxBodyBytesOption(own.maxBodyBytes);
  const { logger } = gateway;
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
      let read: PushRead;
      let body: unknown;
      try {
        // A body a framework already holds is parsed at once; only a stream is awaited. Every
        // field is checked here, before the claim; a wrapped push's message is made (its data
        // decoded, its attributes copied) only when something reads it: the handler, a key
        // function, a fingerprint.
        body = heldBody(req);
        if (body === UNREAD) body = await readStream(req, limit);
        read = readPushRequest(req, body);
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
      const delivery = new HttpDelivery(read, req, res, startedAt, client?.signal);
      about = delivery;
      if (client) client.about = delivery;
      const outcome = await deliver(gateway, delivery);
      switch (outcome.kind) {
        case "held":
          send(res, 503, heldText(outcome));
          return;
        case "payload_mismatch":
          send(res, 409, payloadMismatchText(outcome.key));
          return;
        case "unkeyed":
        case "invalid_key":
          send(res, 400, oneLine(outcome.reason));
          return;
        case "failed":
          logFailure(logger, outcome, delivery);
          // The reason stays in the log: a 500 body must not leak internals to the caller.
          send(res, 500, "the handler failed; the message will be redelivered");
          return;
        default:
          send(res, 204);
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

/**
 * One push as the pipeline sees it. A wrapped push comes checked but unmade: its key and the
 * fields of the log lines are read off the checked envelope, and its message is made on first
 * read, so a duplicate or a held key never decodes the data.
 */
class HttpDelivery<Q, S> implements Delivery {
  readonly format: PushFormat;
  readonly messageId: string | undefined;
  readonly subscription: string | undefined;
  readonly deliveryAttempt: number | undefined;
  /** A wrapped push's checked envelope; undefined for the formats read whole. */
  readonly envelope: CheckedEnvelope | undefined;
  private made: ParsedMessage | undefined;

  constructor(
    read: PushRead,
    readonly req: Q,
    readonly res: S,
    readonly startedAt: number,
    readonly clientGone: AbortSignal | undefined,
  ) {
    this.format = read.format;
    const fields = read.message ?? read.envelope;
    this.messageId = fields.messageId || read.message?.event?.id;
    this.subscription = fields.subscription;
    this.deliveryAttempt = fields.deliveryAttempt;
    this.envelope = read.envelope;
    this.made = read.message;
  }

  /** The message the handler gets; made once, on first read. */
  get message(): ParsedMessage {
    this.made ??= envelopeMessage(this.envelope as CheckedEnvelope);
    return this.made;
  }
}

type PlainHandler = (
  message: ParsedMessage,
  req: unknown,
  res: unknown,
  signal: AbortSignal,
) => unknown;
type HandlerInTransaction = (
  message: ParsedMessage,
  tx: unknown,
  req: unknown,
  signal: AbortSignal,
) => unknown;

const HTTP: SurfaceSpec<HttpDelivery<HttpRequestLike, HttpResponseLike>, PushRequest> = {
  name: "idempotentHttp",
  request: true,
  own: HTTP_OPTIONS,
  signalAt: 3,
  transactionSignalAt: 3,
  keyInput: (d) => ({ message: d.message, req: d.req }),
  // A wrapped push's key is its messageId, checked non-empty: no message made for it.
  defaultKey: (d) =>
    d.envelope !== undefined ? d.envelope.messageId : defaultMessageKey(d.message),
  noDefaultKey: (d) => missingKeyReason(d.message, d.format),
  readAs: (d) => READ_AS[d.format],
  payload: (d) => d.message,
  traceparents: (d) => [
    readQuietly(d.req.headers, "traceparent"),
    readQuietly(
      d.envelope !== undefined ? d.envelope.attributes : d.message.attributes,
      PUBSUB_TRACEPARENT_ATTRIBUTE,
    ),
    // A wrapped push is no CloudEvent: only the formats read whole carry an event.
    readQuietly(d.envelope !== undefined ? undefined : d.message.event?.extensions, "traceparent"),
  ],
  call: (handler, d, signal) => (handler as PlainHandler)(d.message, d.req, d.res, signal),
  callInTransaction: (handler, d, tx, signal) =>
    (handler as HandlerInTransaction)(d.message, tx, d.req, signal),
};

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
