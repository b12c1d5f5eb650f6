// One delivery, the same on every surface: the disabled switch, the key (resolved and checked
// once), then the claim cycle with the handler as its body. Whatever the handler, the key
// function, the hook or the logger throws becomes an outcome; the surfaces only map it.
import { type CycleBody, runCycle } from "../core/engine/cycle.js";
import { unclaimedSignal } from "../core/engine/lease.js";
import { type CycleOutcome, heldText } from "../core/engine/outcome.js";
import { asError, InvalidConfiguration, isoTime, payloadMismatchText } from "../core/errors.js";
import { deliveryFields, errorText, type MessageRef } from "../core/logger.js";
import type { ResolvedLockOptions } from "../core/options.js";
import type { Observation } from "../core/telemetry/observation.js";
import { traceCycle, traceDelivery } from "../core/telemetry/trace.js";
import { firstTraceparent } from "../core/trace-context.js";
import type { Logger } from "../core/types.js";
import { assertValidKey } from "../core/validate.js";
import { scopedBody, unguardedScope } from "../core/verbs/scope.js";
import {
  knownAttempt,
  lastAttemptOptions,
  onLastAttempts,
  type ResolvedDeadLetter,
  reportExhausted,
  warnNoAttempt,
} from "./dead-letter.js";
import { waitWithinDeadline } from "./deadline.js";
import type { DeliveryOutcome } from "./delivery-outcome.js";
import { DISABLED_ENV, gatewayDisabled, warnDisabledOnce } from "./disabled.js";
import type { Delivery, Gateway } from "./gateway.js";

/** Run one delivery through its gateway. Never rejects. */
export function deliver<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
): Promise<DeliveryOutcome> {
  const run = gateway.spec.settle ? deliverAndSettle : deliverWith;
  return traceDelivery(gateway, delivery, run, deliveryTrace);
}

/** The delivery, then the surface settles its message, both inside the delivery's span. */
async function deliverAndSettle<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
  logger: Logger,
  under: Observation | undefined,
): Promise<DeliveryOutcome> {
  const outcome = await deliverWith(gateway, delivery, logger, under);
  const { settle } = gateway.spec;
  return settle ? settle(delivery, outcome, logger) : outcome;
}

/**
 * The delivery, dead-letter aware when `deadLetter` is set and the message carries its
 * attempt: its last attempts wait for a holder, and the one Pub/Sub dead-letters is reported
 * (and shown to onExhausted) before the surface nacks it. Without `deadLetter`, the delivery's
 * own promise: no async frame of its own on the common path.
 */
function deliverWith<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
  logger: Logger,
  under: Observation | undefined,
): Promise<DeliveryOutcome> {
  const { deadLetter } = gateway;
  if (deadLetter === undefined) return deliverOnce(gateway, delivery, logger, under, false);
  const attempt = knownAttempt(delivery);
  if (attempt === undefined) {
    warnNoAttempt(`${gateway.spec.name}()`, deadLetter, delivery, logger);
    return deliverOnce(gateway, delivery, logger, under, false);
  }
  return deliverCounted(gateway, delivery, logger, under, deadLetter, attempt);
}

/** A delivery whose attempt Pub/Sub counts toward the subscription's dead-letter policy. */
async function deliverCounted<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
  logger: Logger,
  under: Observation | undefined,
  deadLetter: ResolvedDeadLetter,
  attempt: number,
): Promise<DeliveryOutcome> {
  const last = onLastAttempts(deadLetter, attempt);
  const outcome = await deliverOnce(gateway, delivery, logger, under, last);
  if (attempt >= deadLetter.maxDeliveryAttempts) {
    const input = () => gateway.spec.keyInput(delivery);
    await reportExhausted(deadLetter, input, outcome, attempt, delivery, logger);
  }
  return outcome;
}

/**
 * One delivery as an async function would run it, without the async frame: a `.then` after
 * the claim cycle costs less than an await, and this is every delivery's path (npm run bench
 * -- --only gateway --against: a duplicate push 7-10 % faster). A throw is a rejection still.
 */
function deliverOnce<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
  logger: Logger,
  under: Observation | undefined,
  lastAttempts: boolean,
): Promise<DeliveryOutcome> {
  try {
    // A native promise comes back as itself; an outcome decided before the claim, wrapped.
    // The parameters are spelled out: a rest parameter would allocate an array per delivery.
    return Promise.resolve(startOnce(gateway, delivery, logger, under, lastAttempts));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The switch, the key and the fingerprint, then the claim cycle; an outcome when refused. */
function startOnce<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
  logger: Logger,
  under: Observation | undefined,
  lastAttempts: boolean,
): DeliveryOutcome | Promise<DeliveryOutcome> {
  if (gatewayDisabled()) {
    warnDisabledOnce(logger);
    if (gateway.transaction) return disabledWithoutTransaction();
    return runUnclaimed(gateway, delivery, "disabled");
  }
  const { spec } = gateway;
  let key: unknown;
  try {
    // A key function that throws is a bug in the caller: it propagates (nack), not unkeyed.
    key = gateway.key ? gateway.key(spec.keyInput(delivery)) : spec.defaultKey(delivery);
  } catch (error) {
    return {
      kind: "failed",
      key: undefined,
      error: asError("the key function", error),
      inBody: false,
    };
  }
  if (key === undefined || key === "") {
    const reason = unkeyedReason(gateway, delivery, key);
    if (!gateway.allowUnguarded) {
      logger.warn(
        "no idempotency key resolved; refusing the message",
        deliveryFields("unkeyed", undefined, delivery, reason),
      );
      return { kind: "unkeyed", reason: `${UNKEYED}: ${reason}` };
    }
    logger.warn(
      "no idempotency key resolved; running the handler unguarded",
      deliveryFields("unguarded", undefined, delivery, reason),
    );
    return runUnclaimed(gateway, delivery, "unguarded");
  }
  try {
    assertValidKey(key);
  } catch (error) {
    // No store can hold it, and no redelivery changes it: refused before the handler. The
    // key itself stays out of the line: it may be huge, or not a string at all.
    const reason = (error as Error).message;
    logger.warn(
      "the message's idempotency key is unusable; refusing it",
      deliveryFields("invalid_key", undefined, delivery, reason),
    );
    return { kind: "invalid_key", reason };
  }
  let fingerprint: string | undefined;
  try {
    fingerprint = gateway.fingerprint?.(delivery);
  } catch (error) {
    // As a key function's throw: a bug or an unreadable message, never an ack.
    return { kind: "failed", key, error: asError("the fingerprint", error), inBody: false };
  }
  const options = optionsFor(gateway, delivery, lastAttempts);
  return traceCycle(
    {
      mode: gateway.transaction ? "transaction" : "lock",
      key,
      options,
      // The handler's steps key on the delivery's key (core/verbs/scope.ts).
      body: gateway.steps
        ? scopedBody(handlerBody(gateway, delivery), key, options, delivery)
        : handlerBody(gateway, delivery),
      bodyTakesSignal: gateway.handlerTakesSignal,
      message: delivery,
      signal: delivery.clientGone,
      fingerprint,
    },
    runCycle,
    under,
  ).then((outcome) => settled(gateway, delivery, outcome, logger));
}

/** The handler as the cycle's body. */
function handlerBody<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
): CycleBody<unknown> {
  const { spec, handler } = gateway;
  return gateway.transaction
    ? (_claim, signal, tx) => spec.callInTransaction(handler, delivery, tx, signal)
    : (_claim, signal) => spec.call(handler, delivery, signal);
}

/**
 * The delivery's lines for a duplicate (and the hook told) or a held key; a failure's error
 * made an Error, whatever was thrown. Other outcomes are as the cycle ended.
 */
function settled<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
  outcome: CycleOutcome<unknown>,
  logger: Logger,
): DeliveryOutcome {
  switch (outcome.kind) {
    case "duplicate":
      logger.info("duplicate delivery skipped", deliveryFields("duplicate", outcome.key, delivery));
      if (gateway.onDuplicate) callHook(gateway.onDuplicate, outcome.key, delivery, logger);
      return outcome;
    case "held":
      // One line, no stack: contention is expected under redelivery and must not page anyone.
      logger.warn(
        "key held by another delivery; nacking for a later redelivery",
        deliveryFields("held", outcome.key, delivery, heldText(outcome), {
          leaseExpiresAt:
            outcome.leaseExpiresAt === undefined ? undefined : isoTime(outcome.leaseExpiresAt),
        }),
      );
      return outcome;
    case "payload_mismatch":
      // Never acked: the second payload goes to the dead-letter topic, and to a person.
      logger.error(
        "another payload under the same key; refusing it (nack) — the handler did not run",
        deliveryFields(
          "payload_mismatch",
          outcome.key,
          delivery,
          payloadMismatchText(outcome.key),
          {
            alert: true,
          },
        ),
      );
      return outcome;
    case "failed": {
      // A Duplicate or InProgress thrown by the handler itself (a nested lock) is the
      // handler's error like any other: the gateway's own answers arrive as outcomes.
      const error = asError(outcome.inBody ? "the handler" : "the gateway", outcome.error);
      return error === outcome.error ? outcome : { ...outcome, error };
    }
    default:
      return outcome;
  }
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

/** The handler without a claim: the gateway is disabled, or the message unkeyed and allowed. */
async function runUnclaimed<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
  kind: "disabled" | "unguarded",
): Promise<DeliveryOutcome> {
  const signal = unclaimedSignal(gateway.handlerTakesSignal, delivery.clientGone);
  try {
    const call = () => gateway.spec.call(gateway.handler, delivery, signal);
    await (gateway.steps ? unguardedScope(call, delivery) : call());
    return { kind };
  } catch (error) {
    return { kind: "failed", key: undefined, error: asError("the handler", error), inBody: true };
  }
}

/** The start of every unkeyed refusal; the reason follows it. */
const UNKEYED = "no idempotency key could be resolved for the message";

/** Why no key resolved: what the key function returned, or why the default found none. */
function unkeyedReason<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
  returned: undefined | "",
): string {
  const { spec } = gateway;
  if (gateway.key === undefined) return spec.noDefaultKey(delivery);
  return `the key function (options.key) returned ${returned === "" ? '""' : "undefined"} for this message (read as ${spec.readAs(delivery)}); it must return a non-empty string`;
}

/** Transaction mode with the gateway disabled: no store, so no transaction to run the handler in. */
function disabledWithoutTransaction(): DeliveryOutcome {
  const error = new InvalidConfiguration(
    `${DISABLED_ENV} is set, but the handler runs in the store's transaction (transaction: true) and cannot run without the store; nacking`,
  );
  return { kind: "failed", key: undefined, error, inBody: false };
}

/**
 * The lock options of one delivery: `waitMs` kept inside the request's deadline, if known; on
 * its last attempts (`deadLetter`), the wait as long as the surface can hold it.
 */
function optionsFor<D extends Delivery, I>(
  gateway: Gateway<D, I>,
  delivery: D,
  lastAttempts: boolean,
): ResolvedLockOptions {
  const { lock, requestTimeout, deadLetter } = gateway;
  const startedAt = delivery.startedAt ?? Date.now();
  const usual =
    requestTimeout === undefined || lock.waitMs === 0
      ? lock
      : waitWithinDeadline(lock, requestTimeout.ms, startedAt);
  if (!lastAttempts || deadLetter === undefined) return usual;
  const surface = { request: gateway.spec.request, timeout: requestTimeout };
  return lastAttemptOptions(lock, usual, deadLetter, surface, startedAt);
}

/** The messaging attributes and remote parent of one delivery; never throws. */
function deliveryTrace<D extends Delivery, I>(gateway: Gateway<D, I>, delivery: D) {
  let traceparents: readonly unknown[] = [];
  try {
    traceparents = gateway.spec.traceparents(delivery);
  } catch {
    // A message whose fields cannot be read has no trace to continue; the delivery decides.
  }
  return {
    surface: gateway.spec.name,
    messageId: delivery.messageId || undefined,
    subscription: delivery.subscription || undefined,
    deliveryAttempt: delivery.deliveryAttempt,
    parent: firstTraceparent(...traceparents),
  };
}
