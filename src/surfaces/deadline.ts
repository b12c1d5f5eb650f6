// Deadlines of a push: how long the platform lets a request run (an option, or what the
// runtime tells), checked against the lease once when a surface is built; the wait for a
// held key kept inside it; and the watch on a client that gives up before we answer.
import { MAX_LEASE_MS } from "../core/constants.js";
import { deliveryFields, type MessageRef } from "../core/logger.js";
import type { ResolvedLockOptions } from "../core/options.js";
import type { Logger } from "../core/types.js";
import { assertPositiveMs, describe } from "../core/validate.js";

/**
 * The deadline option of the push surfaces ({@link idempotentHttp} and {@link idempotent}).
 * The pull surface has no request and takes none.
 *
 * @example
 * ```ts
 * import { idempotentHttp, InMemoryLock, type RequestTimeoutOptions } from "gcp-pubsub-idempotency";
 *
 * // The service runs with `gcloud run deploy --timeout=300`.
 * const deadline: RequestTimeoutOptions = { requestTimeoutMs: 300_000 };
 * const handler = idempotentHttp({ backend: new InMemoryLock(), waitMs: 5_000, ...deadline }, async () => {});
 * ```
 */
export interface RequestTimeoutOptions {
  /**
   * How long the platform lets one request run, in ms: the Cloud Run request timeout or
   * the function timeout. Default: what the runtime tells in `CLOUD_RUN_TIMEOUT_SECONDS`
   * (or `FUNCTION_TIMEOUT_SEC`), else unknown. A lease shorter than it is warned about
   * once, when the function is built; `waitMs` never runs past it.
   */
  requestTimeoutMs?: number | undefined;
}

/** A known request timeout and where it was learnt, for the warnings that cite it. */
export interface RequestTimeout {
  readonly ms: number;
  readonly source: string;
}

/**
 * Where a runtime tells its request timeout, in seconds, first match wins.
 *
 * - `CLOUD_RUN_TIMEOUT_SECONDS`: not in Cloud Run's published container contract, which
 *   lists only PORT, K_SERVICE, K_REVISION and K_CONFIGURATION for services
 *   (https://cloud.google.com/run/docs/container-contract). functions-framework reads it as
 *   the function timeout: Node.js since 3.4.0 (`--timeout`, src/options.ts; PR
 *   GoogleCloudPlatform/functions-framework-nodejs#600) and Go (PR
 *   GoogleCloudPlatform/functions-framework-go#244, where a 2026 comment notes it is
 *   undocumented). So Cloud Run functions (Cloud Functions 2nd gen) evidently set it; a
 *   plain Cloud Run container may not, and there `requestTimeoutMs` is the way.
 * - `FUNCTION_TIMEOUT_SEC`: a reserved variable of Cloud Functions 1st gen's legacy
 *   runtimes (the Node.js 8 era env-var page; 1st-gen `printenv` dumps show it). Current
 *   runtimes are not documented to set it and functions-framework does not read it; it is
 *   honoured where someone does set it.
 */
const TIMEOUT_ENV = ["CLOUD_RUN_TIMEOUT_SECONDS", "FUNCTION_TIMEOUT_SEC"] as const;

/**
 * The request timeout of a push surface: the option when given (checked like every
 * duration), else the first usable environment variable. A value no platform would set
 * (not whole seconds, negative, beyond the longest timer) is ignored with a warning: the
 * environment is outside input, and a bad one must not keep the function from starting.
 */
export function resolveRequestTimeout(
  where: string,
  option: unknown,
  logger: Logger,
): RequestTimeout | undefined {
  if (option !== undefined) {
    assertPositiveMs("options.requestTimeoutMs", option);
    return { ms: option, source: "options.requestTimeoutMs" };
  }
  for (const name of TIMEOUT_ENV) {
    const raw = process.env[name];
    if (raw === undefined) continue;
    const text = raw.trim();
    // Whole seconds as the platforms write them; ten digits are already beyond the cap below.
    const seconds = /^[0-9]{1,10}$/.test(text) ? Number(text) : Number.NaN;
    // 0 is "no timeout" to functions-framework; an empty value is taken as unset.
    if (text === "" || seconds === 0) continue;
    if (!(seconds * 1000 <= MAX_LEASE_MS)) {
      logger.warn(
        `${where}: ignoring ${name}=${describe(raw)}: not a whole number of seconds from 1 to ${Math.floor(MAX_LEASE_MS / 1000)}; the request timeout stays unknown`,
        { outcome: "config_ignored", variable: name },
      );
      continue;
    }
    return { ms: seconds * 1000, source: name };
  }
  return undefined;
}

/**
 * Warn, once when the surface is built, when a handler may outlive its claim within one
 * request: README sizing rule 1. With heartbeat the claim lives as long as the renewals
 * (`maxHoldMs`), so that is what must cover the timeout.
 */
export function warnLeaseShorterThanTimeout(
  where: string,
  lock: ResolvedLockOptions,
  timeout: RequestTimeout,
): void {
  const { leaseMs, heartbeat } = lock;
  if (Math.max(leaseMs, heartbeat?.maxHoldMs ?? 0) >= timeout.ms) return;
  const held = heartbeat
    ? `heartbeat.maxHoldMs (${heartbeat.maxHoldMs} ms) and leaseMs (${leaseMs} ms) are`
    : `leaseMs (${leaseMs} ms) is`;
  const fix = heartbeat ? "raise heartbeat.maxHoldMs" : "raise leaseMs or turn on heartbeat";
  lock.logger.warn(
    `${where}: ${held} shorter than the request timeout (${timeout.ms} ms, from ${timeout.source}). A handler may still run when its claim lapses, and a redelivery then runs it a second time. This breaks sizing rule 1, "the lease outlasts the work": ${fix} to at least the request timeout`,
    {
      outcome: "lease_shorter_than_request_timeout",
      sizingRule: 1,
      leaseMs,
      ...(heartbeat ? { maxHoldMs: heartbeat.maxHoldMs } : {}),
      requestTimeoutMs: timeout.ms,
      source: timeout.source,
    },
  );
}

/**
 * The lock options of one delivery with `waitMs` cut to what is left before the request's
 * deadline, so a held key is answered (503, or the CloudEvent's 500) while the client still
 * listens. A tenth of the timeout, at most a second, is kept for the last claim and the
 * answer. Unchanged, and no allocation, when the wait fits.
 */
export function waitWithinDeadline(
  lock: ResolvedLockOptions,
  timeoutMs: number,
  startedAt: number,
): ResolvedLockOptions {
  const leftMs = leftOfHold(timeoutMs, startedAt);
  return leftMs < lock.waitMs ? { ...lock, waitMs: leftMs } : lock;
}

/**
 * Pub/Sub's longest push ack deadline, 600 s: it stops listening to a push by then, so no push
 * surface holds a delivery longer, whatever the platform's request timeout.
 */
export const PUSH_HOLD_MAX_MS = 600_000;

/**
 * How long `@google-cloud/pubsub` keeps a pulled message leased by default (its
 * `maxExtensionTime`, 60 minutes from receipt); the pull surface cannot read the subscriber's
 * own setting, so `deadLetter.maxWaitMs` is how a shorter one is told.
 */
export const PULL_HOLD_DEFAULT_MS = 60 * 60_000;

/**
 * The longest a surface can hold one delivery, in ms from its start: a push until its request
 * deadline (the platform's timeout when known) and never past Pub/Sub's longest push ack
 * deadline, `limitMs` (an option) only shortening it; a pulled message until its lease ends,
 * `limitMs` when given (the subscriber's own `maxExtensionTime`), else the client's default.
 */
export function holdLimitMs(
  request: boolean,
  timeout: RequestTimeout | undefined,
  limitMs: number | undefined,
): number {
  if (!request) return limitMs ?? PULL_HOLD_DEFAULT_MS;
  const push = Math.min(timeout?.ms ?? PUSH_HOLD_MAX_MS, PUSH_HOLD_MAX_MS);
  return limitMs === undefined ? push : Math.min(push, limitMs);
}

/** What is left of `limitMs` from `startedAt`, less the reserve {@link waitWithinDeadline} keeps. */
export function leftOfHold(limitMs: number, startedAt: number): number {
  const reserveMs = Math.min(1_000, Math.floor(limitMs / 10));
  return Math.max(0, Math.floor(startedAt + limitMs - reserveMs - Date.now()));
}

/** The least of an event emitter the client watch needs: `node:http`'s req and res have it. */
interface Emitter {
  once?(event: string, listener: () => void): unknown;
}

/** A watched request: the signal for the handler, and the message once it is known. */
export interface ClientWatch {
  /** Aborted, with the reason, once the client gave up before we answered. */
  readonly signal: AbortSignal;
  /** For the warning line; set by the surface once the body is parsed. */
  about: MessageRef | undefined;
}

/**
 * Watch a `node:http`-like request for a client that gives up before we answer: Pub/Sub at
 * its ack deadline, the platform at the request timeout. The response's `close` before
 * `end()` means the connection went; `aborted` on the request covers a client that left
 * while sending the body. The request's own `close` is no such sign: since Node.js 16 it
 * fires once the body has been read. One WARNING line, then the signal aborts; the
 * handler decides what to do with it, and the lock settles the claim as for any outcome.
 * Objects without `once` (in-process test doubles) are not watched: undefined, and no
 * allocation.
 */
export function watchClient(
  req: Emitter,
  res: Emitter & { readonly writableEnded?: boolean },
  startedAt: number,
  logger: Logger,
): ClientWatch | undefined {
  let onRes: boolean;
  let onReq: boolean;
  try {
    onRes = typeof res.once === "function";
    onReq = typeof req.once === "function";
  } catch {
    return undefined; // a hostile getter: unwatched, and the request is still answered
  }
  if (!onRes && !onReq) return undefined;
  const controller = new AbortController();
  const watch: ClientWatch = { signal: controller.signal, about: undefined };
  const gone = (): void => {
    // Runs inside the emitter's emit: a throw here would be the server's uncaught exception.
    try {
      if (controller.signal.aborted || res.writableEnded === true) return;
      const elapsedMs = Date.now() - startedAt;
      logger.warn(
        `the client went away after ${elapsedMs} ms, before the answer; the handler's signal is aborted and the message may be redelivered`,
        deliveryFields("client_gone", undefined, watch.about, undefined, { elapsedMs }),
      );
      controller.abort(new Error(`the client went away after ${elapsedMs} ms`));
    } catch {
      // A response whose state cannot be read: leave the signal as it is.
    }
  };
  try {
    if (onRes) res.once?.("close", gone);
    if (onReq) req.once?.("aborted", gone);
  } catch {
    // An emitter that refuses listeners leaves the request unwatched, not unanswered.
  }
  return watch;
}
