// The request, response and option types of idempotentHttp: what it reads of a request and
// writes to a response (functions-framework, Express and node:http fit them), and what its
// key function receives.

import type { RequestTimeoutOptions } from "./deadline.js";
import type { ParsedMessage } from "./formats/parsed-message.js";
import type { HttpHeadersLike } from "./formats/request-headers.js";
import type { GatewayOptions } from "./gateway.js";
import type { PushAuthOptions } from "./push-auth/options.js";

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
