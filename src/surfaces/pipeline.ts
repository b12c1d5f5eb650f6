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
import { deliveryFields, errorStack, errorText, type MessageRef } from "../core/logger.js";
import {
  backendName,
  LOCK_OPTION_NAMES,
  type ResolvedLockOptions,
  resolveLockOptions,
  transactionalBackend,
} from "../core/options.js";
import { reportPeerLoading } from "../core/peer.js";
import type { TransactionalLockBackend } from "../core/port.js";
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
} from "../core/transaction.js";
import type { GuardedBody, LockOptions, Logger } from "../core/types.js";
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
  // A backend's driver that is not installed: one ERROR line now, not a nack loop found later.
  reportPeerLoading(where, lock.backend, lock.logger);
  return resolved;
}

/**
 * One message as a surface hands it to {@link deliver}. It is the {@link MessageRef} of
 * every log line about it: its `messageId`, `subscription` and `deliveryAttempt` as the
 * surface read them.
 */
export interface Delivery<I> extends MessageRef {
  /** What the key function receives. */
  readonly input: I;
  /** The key when there is no key function: the message id, or undefined without one. */
  readonly defaultKey: () => string | undefined;
  /** Why {@link defaultKey} found none, for the refusal; built only then. */
  readonly noDefaultKey: () => string;
  /** What the gateway read the message as ("a Pub/Sub push envelope"), for reasons. */
  readonly readAs: string;
  /** Calls the user's handler with its signal, and its transaction in transaction mode. */
  readonly run: (signal: AbortSignal, tx: unknown) => unknown;
  /** The message's delivery attempt, when it carries one (a dead-letter policy). */
  readonly deliveryAttempt: number | undefined;
  /** When the request reached us, epoch ms; default when {@link deliver} is called. */
  readonly startedAt?: number;
  /** HTTP: aborted when the client gave up before we answered; the handler's signal follows. */
  readonly clientGone?: AbortSignal | undefined;
  /** What telemetry records of the message; called only when a span or metric records it. */
  readonly carrier?: () => DeliveryCarrier;
}

/** The trace a message continues, as its surface reads it. */
export interface DeliveryCarrier {
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
  | { kind: "ran"; key: string | undefined }
  | { kind: "duplicate"; key: string }
  | { kind: "in_progress"; key: string; refusal: Refusal }
  | { kind: "unkeyed"; error: UnkeyedMessage }
  | { kind: "invalid_key"; error: InvalidKey }
  | { kind: "failed"; error: unknown; fromHandler: boolean; key: string | undefined };

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
    messageId: delivery.messageId || undefined,
    subscription: delivery.subscription || undefined,
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
    return runPlain(run, plainSignal(gateway, clientGone), undefined);
  }
  let key: unknown;
  try {
    // A key function that throws is a bug in the caller: it propagates (nack), not unkeyed.
    key = gateway.key ? gateway.key(delivery.input) : delivery.defaultKey();
  } catch (error) {
    return {
      kind: "failed",
      error: asError("the key function", error),
      fromHandler: false,
      key: undefined,
    };
  }
  if (key === undefined || key === "") {
    const reason = unkeyedReason(gateway, delivery, key);
    if (!gateway.allowUnguarded) {
      logger.warn(
        "no idempotency key resolved; refusing the message",
        deliveryFields("unkeyed", undefined, delivery, reason),
      );
      return { kind: "unkeyed", error: new UnkeyedMessage(`${UNKEYED}: ${reason}`) };
    }
    logger.warn(
      "no idempotency key resolved; running the handler unguarded",
      deliveryFields("unguarded", undefined, delivery, reason),
    );
    if (observation) observation.outcome = "unguarded";
    return runPlain(run, plainSignal(gateway, clientGone), undefined);
  }
  try {
    assertValidKey(key);
  } catch (error) {
    // No store can hold it, and no redelivery changes it: refused before the handler.
    const invalid = error as InvalidKey;
    // The key itself stays out of the line: it may be huge, or not a string at all.
    logger.warn(
      "the message's idempotency key is unusable; refusing it",
      deliveryFields("invalid_key", undefined, delivery, invalid.message),
    );
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
    return { kind: "ran", key };
  } catch (error) {
    // A Duplicate or InProgress thrown by the handler itself (a nested lock) is the
    // handler's error like any other: the gateway's own answers arrive as refusals.
    return {
      kind: "failed",
      error: asError(handlerThrew ? "the handler" : "the gateway", error),
      fromHandler: handlerThrew,
      key,
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
    logger.info("duplicate delivery skipped", deliveryFields("duplicate", key, delivery));
    if (gateway.onDuplicate) callHook(gateway.onDuplicate, key, delivery, logger);
    return { kind: "duplicate", key };
  }
  // One line, no stack: contention is expected under redelivery and must not page anyone.
  const outcome: DeliveryOutcome = { kind: "in_progress", key, refusal };
  logger.warn(
    "key held by another delivery; nacking for a later redelivery",
    deliveryFields("held", key, delivery, heldText(outcome), {
      leaseExpiresAt:
        refusal.leaseExpiresAt === undefined ? undefined : isoTime(refusal.leaseExpiresAt),
    }),
  );
  return outcome;
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
function callHook(
  hook: (key: string) => unknown,
  key: string,
  about: MessageRef,
  logger: Logger,
): void {
  const failed = (hookError: unknown) =>
    logger.error(
      "onDuplicate hook threw; the message is still acked",
      deliveryFields("hook_failed", key, about, errorText(hookError)),
    );
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
  key: string | undefined,
): Promise<DeliveryOutcome> {
  try {
    await run(signal, undefined);
    return { kind: "ran", key };
  } catch (error) {
    return { kind: "failed", error: asError("the handler", error), fromHandler: true, key };
  }
}

/** The start of every UnkeyedMessage a surface refuses with; the reason follows it. */
const UNKEYED = "no idempotency key could be resolved for the message";

/** Why no key resolved: what the key function returned, or why the default found none. */
function unkeyedReason<I>(
  gateway: ResolvedGatewayOptions<I>,
  delivery: Delivery<I>,
  returned: undefined | "",
): string {
  if (gateway.key === undefined) return delivery.noDefaultKey();
  return `the key function (options.key) returned ${returned === "" ? '""' : "undefined"} for this message (read as ${delivery.readAs}); it must return a non-empty string`;
}

/** Transaction mode with the gateway disabled: no store, so no transaction to run the handler in. */
function disabledWithoutTransaction(): DeliveryOutcome {
  const error = new InvalidConfiguration(
    `${DISABLED_ENV} is set, but the handler runs in the store's transaction (transaction: true) and cannot run without the store; nacking`,
  );
  return { kind: "failed", error, fromHandler: false, key: undefined };
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
  const bounded =
    requestTimeout === undefined || lock.waitMs === 0
      ? lock
      : waitWithinDeadline(lock, requestTimeout.ms, delivery.startedAt ?? Date.now());
  // The verbs' own lines (a failed release, a fenced-out complete) name the message too. A
  // literal of the one shape every resolved options object has, not a spread: the spread made
  // a pull duplicate 1.7× slower (npm run bench -- --only gateway; 206k against 345k per
  // CPU-second in .tmp measurements of 4 December).
  return {
    backend: bounded.backend,
    leaseMs: bounded.leaseMs,
    waitMs: bounded.waitMs,
    logger: bounded.logger,
    heartbeat: bounded.heartbeat,
    telemetry: bounded.telemetry,
    message: delivery,
  };
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
  outcome: { error: unknown; fromHandler: boolean; key: string | undefined },
  about: MessageRef,
): void {
  logger.error(
    outcome.fromHandler ? "the handler threw; nacking" : "the gateway failed before the handler",
    deliveryFields("failed", outcome.key, about, errorText(outcome.error), {
      stack: errorStack(outcome.error),
    }),
  );
}
