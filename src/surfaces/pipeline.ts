// The delivery pipeline the three surfaces share: options checked once when a surface is
// built, then per delivery the disabled switch, the key, the claim and the handler, ending in
// one outcome. Each surface only maps that outcome to its own ack/nack or HTTP status.
// Over 350 lines: the build-time checks and the per-delivery paths (plain and transactional)
// share one options type and one outcome.
import {
  asError,
  InProgress,
  InvalidConfiguration,
  type InvalidKey,
  inProgressText,
  isoTime,
  UnkeyedMessage,
} from "../core/errors.js";
import { errorStack, errorText } from "../core/logger.js";
import {
  backendName,
  LOCK_OPTION_NAMES,
  type ResolvedLockOptions,
  resolveLockOptions,
  transactionalBackend,
} from "../core/options.js";
import {
  type DeliveryTrace,
  loadTelemetryApi,
  Observation,
  type ObservedOutcome,
  type TelemetrySettings,
  telemetryApiSettled,
} from "../core/telemetry.js";
import { firstTraceparent } from "../core/trace-context.js";
import {
  type lockInTransaction,
  runInTransactionObserved,
  type TransactionalBody,
  type TransactionalLockBackend,
} from "../core/transaction.js";
import type { GuardedBody, LockOptions, LogFields, Logger } from "../core/types.js";
import {
  assertFunction,
  assertValidKey,
  booleanOption,
  functionOption,
  knownOptions,
  readOptions,
  readProperty,
} from "../core/validate.js";
import { COMPLETED_BY_LOCK_DETAIL, Refusal, runObserved, runResolved } from "../core/verbs.js";
import {
  eitherSignal,
  type RequestTimeout,
  resolveRequestTimeout,
  waitWithinDeadline,
  warnLeaseShorterThanTimeout,
} from "./deadline.js";

/**
 * Options of the three Pub/Sub surfaces: {@link LockOptions} (with its `waitMs`) plus how to
 * key a message. `I` is what the key function receives (the CloudEvent, the
 * {@link PushRequest}, or the pull `Message`). The ttl belongs to the backend.
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
  key?: ((input: I) => string | undefined) | undefined;
  /** Called with the key when a duplicate was skipped; a throw is logged, never raised. */
  onDuplicate?: ((key: string) => void) | undefined;
  /** Run the handler unguarded (with a warning) when no key resolves, instead of refusing. */
  allowUnguarded?: boolean | undefined;
  /**
   * `true` runs the handler in the store's transaction, with DONE committed together with
   * its writes: see {@link TransactionalGatewayOptions}. Needs a backend with transactions.
   */
  transaction?: false | undefined;
};

/**
 * A surface's options `O` in transaction mode (`transaction: true`): the handler gets the
 * store's transaction as its second argument, and the message's DONE commits in that same
 * transaction, as {@link lockInTransaction} does: the handler's writes and DONE land
 * together or not at all. The backend must offer transactions (SqlLock, DatastoreLock,
 * FirestoreLock); `allowUnguarded` is not available (an unkeyed message has no claim to
 * commit), and with `GCP_PUBSUB_IDEMPOTENCY_DISABLED` set a delivery fails (nack) rather
 * than run the handler without its transaction.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import { type CloudEventLike, type GatewayOptions, idempotent, parseCloudEvent, type TransactionalGatewayOptions } from "gcp-pubsub-idempotency";
 * import { SqlLock } from "gcp-pubsub-idempotency/sql";
 *
 * const backend = new SqlLock({ client: new pg.Pool() });
 * const options: TransactionalGatewayOptions<GatewayOptions<CloudEventLike>, pg.PoolClient> = {
 *   backend,
 *   transaction: true,
 * };
 * export const handler = idempotent(options, async (event, tx) => {
 *   await tx.query("INSERT INTO orders (body) VALUES ($1)", [parseCloudEvent(event).text()]);
 * });
 * ```
 */
export type TransactionalGatewayOptions<O, Tx> = Omit<
  O,
  "backend" | "transaction" | "allowUnguarded"
> & {
  /** A backend with transactions: SqlLock, DatastoreLock, FirestoreLock, or your own. */
  backend: TransactionalLockBackend<Tx>;
  /** Run the handler in the store's transaction; DONE commits with its writes. */
  transaction: true;
};

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

/** A surface's options after one validation pass, made when the surface is built. */
export interface ResolvedGatewayOptions<I> {
  readonly lock: ResolvedLockOptions;
  readonly key: ((input: I) => unknown) | undefined;
  readonly onDuplicate: ((key: string) => unknown) | undefined;
  readonly allowUnguarded: boolean;
  /** The push surfaces' request timeout, when known; `waitMs` stays inside it. */
  readonly requestTimeout: RequestTimeout | undefined;
  /** The handler declares its signal parameter (or a heartbeat may abort it). */
  readonly handlerTakesSignal: boolean;
  /** With `transaction: true`: the backend, whose transaction the handler runs in. */
  readonly transactional?: TransactionalLockBackend<unknown> | undefined;
  /** The surface's name (`idempotentHttp`), for telemetry. */
  readonly surface: string;
  /** The backend's class name, read once here for telemetry. */
  readonly backendName: string;
}

const GATEWAY_OPTIONS = ["key", "onDuplicate", "allowUnguarded", "transaction"] as const;
const PUSH_OPTIONS = [...GATEWAY_OPTIONS, "requestTimeoutMs"] as const;

/** What a surface tells the pipeline about itself when it is built. */
export interface SurfaceShape {
  /** Position of the AbortSignal among the handler's parameters. */
  readonly signalAt: number;
  /** Its position with `transaction: true`; default one later (the transaction comes first). */
  readonly transactionSignalAt?: number;
  /** A push surface serves a request with a timeout; the pull surface does not. */
  readonly request: boolean;
  /** Options the surface reads itself (`maxBodyBytes`, `auth`): known, not read here. */
  readonly own?: readonly string[];
}

/**
 * Check every option when the surface is built (at deploy), not on the first message (as
 * a nack loop), with the checks the verbs run plus the surface's own. No I/O: the disabled
 * switch must be able to skip the store entirely. A push surface also learns its request
 * timeout here and warns, once, when the lease is shorter.
 */
export function resolveGatewayOptions<I>(
  surface: string,
  options: unknown,
  handler: unknown,
  shape: SurfaceShape,
): ResolvedGatewayOptions<I> {
  const where = `${surface}()`;
  const names = shape.request ? PUSH_OPTIONS : GATEWAY_OPTIONS;
  // Every option name is checked once, here, against all the surface takes; the readers
  // of its parts (the verb's, the surface's own) then read only what they know.
  const known = knownOptions([...LOCK_OPTION_NAMES, ...names, ...(shape.own ?? [])], "lock");
  const lock = resolveLockOptions(where, options, known);
  assertFunction(where, "handler", handler);
  const o = readOptions(where, options, false, names, false);
  const arity = readProperty(`${where} handler.length`, handler as object, "length");
  const allowUnguarded = booleanOption("options.allowUnguarded", o.allowUnguarded) ?? false;
  const transactional = booleanOption("options.transaction", o.transaction)
    ? transactionalBackend<unknown>(where, lock.backend)
    : undefined;
  if (transactional && allowUnguarded) {
    throw new InvalidConfiguration(
      `${where} options.allowUnguarded cannot be combined with transaction: true (an unkeyed message has no claim to commit with its writes)`,
    );
  }
  const signalAt = transactional
    ? (shape.transactionSignalAt ?? shape.signalAt + 1)
    : shape.signalAt;
  const resolved: ResolvedGatewayOptions<I> = {
    lock,
    key: functionOption<(input: I) => unknown>("options.key", o.key),
    onDuplicate: functionOption<(key: string) => unknown>("options.onDuplicate", o.onDuplicate),
    allowUnguarded,
    transactional,
    requestTimeout: shape.request
      ? resolveRequestTimeout(where, o.requestTimeoutMs, lock.logger)
      : undefined,
    // As lock() decides for its body: a handler that declares no signal gets a shared,
    // never-aborted one unless a heartbeat may abort it.
    handlerTakesSignal:
      lock.heartbeat !== undefined || (typeof arity === "number" && arity > signalAt),
    surface,
    backendName: backendName(lock.backend, "custom"),
  };
  if (resolved.requestTimeout) warnLeaseShorterThanTimeout(where, lock, resolved.requestTimeout);
  return resolved;
}

/** One message as a surface hands it to {@link deliver}. */
export interface Delivery<I> {
  /** What the key function receives. */
  readonly input: I;
  /** The key when there is no key function: the message id, or undefined without one. */
  readonly defaultKey: () => string | undefined;
  /** Calls the user's handler with its signal, and its transaction in transaction mode. */
  readonly run: (signal: AbortSignal, tx: unknown) => unknown;
  /** Only for the contention warning: redeliveries show there. */
  readonly deliveryAttempt: number | undefined;
  /** When the request reached us, epoch ms; default when {@link deliver} is called. */
  readonly startedAt?: number;
  /** HTTP: aborted when the client gave up before we answered; the handler's signal follows. */
  readonly clientGone?: AbortSignal | undefined;
  /** What telemetry records of the message; called only when a span or metric records it. */
  readonly carrier?: () => DeliveryCarrier;
}

/** Where a message came from and the trace it continues, as its surface reads them. */
export interface DeliveryCarrier {
  readonly messageId?: string | undefined;
  readonly subscription?: string | undefined;
  /** `traceparent` values in order of preference; the first valid one is the parent. */
  readonly traceparents: readonly unknown[];
}

/**
 * The signal of a handler that cannot be aborted: it declares none, and no heartbeat runs.
 * Shared, as lock() shares one, because a controller per delivery is measurable here.
 */
const NEVER_ABORTED = new AbortController().signal;

/** What became of one delivery; each surface maps it to an ack/nack or a status. */
export type DeliveryOutcome =
  | { kind: "ran" }
  | { kind: "duplicate"; key: string }
  | { kind: "in_progress"; key: string; refusal: Refusal }
  | { kind: "unkeyed"; error: UnkeyedMessage }
  | { kind: "invalid_key"; error: InvalidKey }
  | { kind: "failed"; error: unknown; fromHandler: boolean };

/**
 * Resolve the key, run the handler under `lock`, and classify what happened. Never rejects:
 * whatever the handler, the key function, the hook or the logger throws becomes an outcome.
 */
export function deliver<I>(
  gateway: ResolvedGatewayOptions<I>,
  delivery: Delivery<I>,
): Promise<DeliveryOutcome> {
  // Not async itself: with nothing to record, the delivery's own promise is handed back
  // as it is, without a wrapping promise and its extra turns of the microtask queue.
  const settings = gateway.lock.telemetry;
  if (settings === undefined || (telemetryApiSettled() && Observation.idle(settings))) {
    return deliverObserved(gateway, delivery, undefined);
  }
  return deliverTraced(gateway, delivery, settings);
}

async function deliverTraced<I>(
  gateway: ResolvedGatewayOptions<I>,
  delivery: Delivery<I>,
  settings: TelemetrySettings,
): Promise<DeliveryOutcome> {
  if (!telemetryApiSettled()) await loadTelemetryApi();
  if (Observation.idle(settings)) return deliverObserved(gateway, delivery, undefined);
  const observation = Observation.start(
    settings,
    gateway.transactional ? "lockInTransaction" : "lock",
    gateway.backendName,
    undefined,
    undefined,
    () => deliveryTrace(gateway, delivery),
  );
  if (observation === undefined) return deliverObserved(gateway, delivery, undefined);
  observation.outcome = "ran";
  const outcome = await observation.within(() => deliverObserved(gateway, delivery, observation));
  observation.end(
    observedOutcome(outcome, observation),
    outcome.kind === "failed" ? outcome.error : undefined,
  );
  return outcome;
}

/** The messaging attributes and remote parent of one delivery; never throws. */
function deliveryTrace<I>(
  gateway: ResolvedGatewayOptions<I>,
  delivery: Delivery<I>,
): DeliveryTrace {
  let carrier: DeliveryCarrier | undefined;
  try {
    carrier = delivery.carrier?.();
  } catch {
    // A message whose fields cannot be read has no trace to continue; the delivery decides.
  }
  return {
    surface: gateway.surface,
    messageId: carrier?.messageId || undefined,
    subscription: carrier?.subscription || undefined,
    deliveryAttempt: delivery.deliveryAttempt,
    parent: carrier ? firstTraceparent(...carrier.traceparents) : undefined,
  };
}

function observedOutcome(outcome: DeliveryOutcome, observation: Observation): ObservedOutcome {
  switch (outcome.kind) {
    case "ran":
      return observation.inner?.outcome ?? observation.outcome;
    case "duplicate":
      return "duplicate";
    case "in_progress":
      return "held";
    case "unkeyed":
      return "unkeyed";
    case "invalid_key":
      return "invalid_key";
    case "failed":
      return "failed";
  }
}

async function deliverObserved<I>(
  gateway: ResolvedGatewayOptions<I>,
  delivery: Delivery<I>,
  observation: Observation | undefined,
): Promise<DeliveryOutcome> {
  const logger = observation ? observation.logger(gateway.lock.logger) : gateway.lock.logger;
  const { run, clientGone } = delivery;
  if (gatewayDisabled()) {
    if (observation) observation.outcome = "disabled";
    warnDisabledOnce(logger);
    if (gateway.transactional) return disabledWithoutTransaction();
    return runPlain(run, plainSignal(gateway, clientGone));
  }
  let key: unknown;
  try {
    // A key function that throws is a bug in the caller: it propagates (nack), not unkeyed.
    key = gateway.key ? gateway.key(delivery.input) : delivery.defaultKey();
  } catch (error) {
    return { kind: "failed", error: asError("the key function", error), fromHandler: false };
  }
  if (key === undefined || key === "") {
    if (!gateway.allowUnguarded) {
      logger.warn("no idempotency key resolved; refusing the message", { outcome: "unkeyed" });
      return { kind: "unkeyed", error: new UnkeyedMessage() };
    }
    logger.warn("no idempotency key resolved; running the handler unguarded", {
      outcome: "unguarded",
    });
    if (observation) observation.outcome = "unguarded";
    return runPlain(run, plainSignal(gateway, clientGone));
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

  let handlerThrew = false;
  // The transaction of the handler's run (transaction mode; a store may run it again).
  let tx: unknown;
  const runHandler = async (signal: AbortSignal) => {
    try {
      return await run(signal, tx);
    } catch (error) {
      handlerThrew = true;
      throw error;
    }
  };
  observation?.keyed(key);
  try {
    const body = guardedBody(gateway, runHandler, clientGone);
    const lock = lockFor(gateway, delivery);
    const transactional = gateway.transactional;
    const verb = observation?.startVerb(key);
    if (transactional) {
      // As `body` itself: declare the signal only when the handler can see it abort.
      const inTransaction: TransactionalBody<unknown, unknown> =
        body.length >= 2
          ? (inTx, claim, signal) => {
              tx = inTx;
              return body(claim, signal);
            }
          : (inTx, claim) => {
              tx = inTx;
              return body(claim, NEVER_ABORTED);
            };
      const result = await runInTransactionObserved(key, lock, transactional, inTransaction, verb);
      if (result instanceof Refusal) return refused(gateway, delivery, key, result, logger);
    } else {
      // A duplicate or a held key comes back as a Refusal: no exception on an expected path.
      const result =
        verb === undefined
          ? await runResolved("lock", key, lock, body)
          : await runObserved(verb, lock, (observed) =>
              runResolved("lock", key, observed, body, verb),
            );
      if (result instanceof Refusal) return refused(gateway, delivery, key, result, logger);
    }
    return { kind: "ran" };
  } catch (error) {
    // A Duplicate or InProgress thrown by the handler itself (a nested lock) is the
    // handler's error like any other: the gateway's own answers arrive as refusals.
    return {
      kind: "failed",
      error: asError(handlerThrew ? "the handler" : "the gateway", error),
      fromHandler: handlerThrew,
    };
  }
}

/** A duplicate is acked (and the hook told); a held key is nacked, in one log line each. */
function refused<I>(
  gateway: ResolvedGatewayOptions<I>,
  delivery: Delivery<I>,
  key: string,
  refusal: Refusal,
  logger: Logger,
): DeliveryOutcome {
  if (refusal.status === "done") {
    logger.info("duplicate delivery skipped", { key, outcome: "duplicate" });
    if (gateway.onDuplicate) callHook(gateway.onDuplicate, key, logger);
    return { kind: "duplicate", key };
  }
  // One line, no stack: contention is expected under redelivery and must not page anyone.
  const fields: LogFields = { key, outcome: "in_progress" };
  if (refusal.leaseExpiresAt !== undefined) fields.leaseExpiresAt = isoTime(refusal.leaseExpiresAt);
  if (delivery.deliveryAttempt !== undefined) fields.deliveryAttempt = delivery.deliveryAttempt;
  logger.warn("key held by another delivery; nacking for a later redelivery", fields);
  return { kind: "in_progress", key, refusal };
}

/** A held delivery as the error a surface throws (built only where one is thrown). */
export function heldError(outcome: { key: string; refusal: Refusal }): InProgress {
  const { refusal } = outcome;
  return refusal.completedByLock
    ? new InProgress(outcome.key, undefined, COMPLETED_BY_LOCK_DETAIL)
    : new InProgress(outcome.key, refusal.leaseExpiresAt);
}

/** A held delivery as text (a 503 body), without building an error. */
export function heldText(outcome: { key: string; refusal: Refusal }): string {
  const { refusal } = outcome;
  return refusal.completedByLock
    ? inProgressText(outcome.key, undefined, COMPLETED_BY_LOCK_DETAIL)
    : inProgressText(outcome.key, refusal.leaseExpiresAt);
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

async function runPlain(
  run: Delivery<unknown>["run"],
  signal: AbortSignal,
): Promise<DeliveryOutcome> {
  try {
    await run(signal, undefined);
    return { kind: "ran" };
  } catch (error) {
    return { kind: "failed", error: asError("the handler", error), fromHandler: true };
  }
}

/** Transaction mode with the gateway disabled: no store, so no transaction to run the handler in. */
function disabledWithoutTransaction(): DeliveryOutcome {
  const error = new InvalidConfiguration(
    `${DISABLED_ENV} is set, but the handler runs in the store's transaction (transaction: true) and cannot run without the store; nacking`,
  );
  return { kind: "failed", error, fromHandler: false };
}

/** The handler's signal when it runs without a claim (disabled, unguarded): no lease to lose. */
function plainSignal<I>(
  gateway: ResolvedGatewayOptions<I>,
  clientGone: AbortSignal | undefined,
): AbortSignal {
  return clientGone ?? (gateway.handlerTakesSignal ? new AbortController().signal : NEVER_ABORTED);
}

/** The lock options of one delivery: `waitMs` kept inside the request's deadline, if known. */
function lockFor<I>(
  gateway: ResolvedGatewayOptions<I>,
  delivery: Delivery<I>,
): ResolvedLockOptions {
  const { lock, requestTimeout } = gateway;
  if (requestTimeout === undefined || lock.waitMs === 0) return lock;
  return waitWithinDeadline(lock, requestTimeout.ms, delivery.startedAt ?? Date.now());
}

/**
 * The body handed to lock(): the handler with a signal that aborts when the lease is lost
 * (the lock's own signal; only a heartbeat aborts it) or when the client went away. A
 * handler that declares no signal, without heartbeat, gets a shared never-aborted one and
 * lock() allocates none: nothing is spent on a signal nobody can abort or read.
 */
function guardedBody<I>(
  gateway: ResolvedGatewayOptions<I>,
  run: (signal: AbortSignal) => Promise<unknown>,
  clientGone: AbortSignal | undefined,
): GuardedBody<unknown> {
  if (clientGone === undefined) {
    return gateway.handlerTakesSignal ? (_claim, signal) => run(signal) : () => run(NEVER_ABORTED);
  }
  if (gateway.lock.heartbeat === undefined) return () => run(clientGone);
  return async (_claim, signal) => {
    const either = eitherSignal(signal, clientGone);
    try {
      return await run(either.signal);
    } finally {
      either.dispose();
    }
  };
}

/**
 * The error line of a failed delivery, with its stack, for the surfaces whose caller does
 * not log it (HTTP and pull; functions-framework logs a `cloudEvent` function's throw).
 */
export function logFailure(
  logger: Logger,
  outcome: { error: unknown; fromHandler: boolean },
  messageId: string,
): void {
  const stack = errorStack(outcome.error);
  logger.error(
    outcome.fromHandler ? "the handler threw; nacking" : "the gateway failed before the handler",
    {
      messageId,
      outcome: "failed",
      error: errorText(outcome.error),
      ...(stack === undefined ? {} : { stack }),
    },
  );
}
