// Dead-letter aware delivery (the surfaces' `deadLetter` option). Pub/Sub counts every nack
// toward a subscription's dead-letter policy, the healthy nack of a copy that met a held key
// too. On a message's last attempts such a copy waits for the holder instead, as long as its
// surface can hold it; the delivery that will be dead-lettered is shown to `onExhausted`
// first. Checked once when the surface is built; the pipeline asks it per delivery.
import { InvalidConfiguration } from "../core/errors.js";
import { deliveryFields, errorText, type MessageRef } from "../core/logger.js";
import type { ResolvedLockOptions } from "../core/options.js";
import type { Logger } from "../core/types.js";
import { assertPositiveMs, describe, readOptions } from "../core/validate.js";
import { holdLimitMs, leftOfHold, type RequestTimeout } from "./deadline.js";
import { acked, type DeliveryOutcome } from "./delivery-outcome.js";

/**
 * The `deadLetter` option of the three surfaces: the subscription's dead-letter policy as the
 * service knows it. `I` is what the key function receives (the CloudEvent, the
 * {@link PushRequest}, or the pull `Message`).
 *
 * It acts only on messages that carry a `deliveryAttempt`, which Pub/Sub sends when the
 * subscription has a dead-letter policy (never on an unwrapped push; the emulator sends it on
 * pull only). Without one a WARNING line says so once, and contention nacks as before.
 *
 * @example
 * ```ts
 * import { PubSub } from "@google-cloud/pubsub";
 * import { type DeadLetterOptions, idempotentMessage, InMemoryLock } from "gcp-pubsub-idempotency";
 * import type { Message } from "@google-cloud/pubsub";
 *
 * // gcloud pubsub subscriptions update orders-pull --dead-letter-topic=orders-dead --max-delivery-attempts=10
 * const deadLetter: DeadLetterOptions<Message> = {
 *   maxDeliveryAttempts: 10,
 *   onExhausted: (message, reason) => console.error("dead-lettered", message.id, reason.message),
 * };
 * new PubSub().subscription("orders-pull").on(
 *   "message",
 *   idempotentMessage<Message>({ backend: new InMemoryLock(), deadLetter }, async () => {}),
 * );
 * ```
 */
export interface DeadLetterOptions<I> {
  /**
   * The subscription's `--max-delivery-attempts`, 5 to 100 as Pub/Sub allows. A delivery whose
   * `deliveryAttempt` is one of the last two (≥ this − 1: Pub/Sub honours the count on a best
   * effort basis) waits for a holder of its key instead of nacking.
   */
  maxDeliveryAttempts: number;
  /**
   * Called once on each delivery that is about to be nacked with `deliveryAttempt` ≥
   * `maxDeliveryAttempts` (the one Pub/Sub dead-letters), before the nack. It observes: its
   * value is ignored, a throw or rejection is logged, and the nack waits for it at most 5 s.
   */
  onExhausted?: ((input: I, reason: ExhaustedReason) => unknown) | undefined;
  /**
   * The longest a delivery on its last attempts waits for the holder, in ms from its arrival
   * (a pulled message: from its receipt). A push can be held until its request timeout
   * (`requestTimeoutMs` or the runtime's) and at most 600 s, Pub/Sub's longest push ack
   * deadline; this only shortens that: set it a little below the subscription's ack deadline
   * (`idempotentHttp` also stops when the client closes the request; the emulator does not close it at the ack deadline). A pulled message is held
   * while the client keeps its lease, 60 minutes by default (`maxExtensionTime`): set this to
   * the subscriber's own `maxExtensionTime` when it differs.
   */
  maxWaitMs?: number | undefined;
}

/**
 * Why a delivery is dead-lettered, as {@link DeadLetterOptions.onExhausted} receives it.
 *
 * @example
 * ```ts
 * import { type ExhaustedReason, idempotentHttp, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * const report = (reason: ExhaustedReason) =>
 *   console.error(`${reason.key ?? "(no key)"}: ${reason.outcome} on attempt ${reason.deliveryAttempt}`);
 * export const push = idempotentHttp(
 *   { backend: new InMemoryLock(), deadLetter: { maxDeliveryAttempts: 10, onExhausted: (_push, reason) => report(reason) } },
 *   async () => {},
 * );
 * ```
 */
export interface ExhaustedReason {
  /**
   * How the delivery ended, the `outcome` word of its log line: `held` (the holder outlived
   * the wait), `failed` (the handler or the store threw), `payload_mismatch`, `unkeyed` or
   * `invalid_key`.
   */
  readonly outcome: NackedOutcome;
  /** The idempotency key, when one resolved. */
  readonly key: string | undefined;
  /** The delivery's `deliveryAttempt`, at least `maxDeliveryAttempts`. */
  readonly deliveryAttempt: number;
  /** `deadLetter.maxDeliveryAttempts`, the subscription's dead-letter policy as configured. */
  readonly maxDeliveryAttempts: number;
  /** For `failed`: what was thrown, always an Error. */
  readonly error: Error | undefined;
  /** One line saying what happened. */
  readonly message: string;
}

/**
 * The outcomes a surface nacks, as {@link ExhaustedReason.outcome} names them.
 *
 * @example
 * ```ts
 * import type { NackedOutcome } from "gcp-pubsub-idempotency";
 *
 * // Poison is what the handler or the message itself caused; contention is not.
 * const poison = (outcome: NackedOutcome) => outcome !== "held";
 * ```
 */
export type NackedOutcome = "held" | "failed" | "payload_mismatch" | "unkeyed" | "invalid_key";

/** `deadLetter` checked, with the one piece of state it keeps: whether it warned. */
export interface ResolvedDeadLetter {
  readonly maxDeliveryAttempts: number;
  readonly onExhausted: ((input: unknown, reason: ExhaustedReason) => unknown) | undefined;
  readonly maxWaitMs: number | undefined;
  /** The "no deliveryAttempt" warning is written once per surface. */
  warnedNoAttempt: boolean;
}

/** Pub/Sub's bounds of a dead-letter policy's max delivery attempts. */
export const MIN_DELIVERY_ATTEMPTS = 5;
export const MAX_DELIVERY_ATTEMPTS = 100;
/** Attempts before the last that wait too: the count is honoured on a best effort basis. */
export const LAST_ATTEMPTS_MARGIN = 1;
/** The longest the nack waits for `onExhausted`. */
export const ON_EXHAUSTED_TIMEOUT_MS = 5_000;

const NAMES = ["maxDeliveryAttempts", "onExhausted", "maxWaitMs"] as const;

/** `options.deadLetter` checked where the surface is built; undefined when absent. */
export function resolveDeadLetter(where: string, value: unknown): ResolvedDeadLetter | undefined {
  if (value === undefined) return undefined;
  const name = "options.deadLetter";
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidConfiguration(
      `${where} ${name} must be an object { maxDeliveryAttempts, onExhausted? }, got ${describe(value)}`,
    );
  }
  const o = readOptions(`${where} ${name}`, value, false, NAMES);
  const max = o.maxDeliveryAttempts;
  if (
    typeof max !== "number" ||
    !Number.isInteger(max) ||
    max < MIN_DELIVERY_ATTEMPTS ||
    max > MAX_DELIVERY_ATTEMPTS
  ) {
    throw new InvalidConfiguration(
      `${where} ${name}.maxDeliveryAttempts must be a whole number from ${MIN_DELIVERY_ATTEMPTS} to ${MAX_DELIVERY_ATTEMPTS}, the subscription's --max-delivery-attempts, got ${describe(max)}`,
    );
  }
  const hook = o.onExhausted;
  if (hook !== undefined && typeof hook !== "function") {
    throw new InvalidConfiguration(
      `${where} ${name}.onExhausted must be a function (input, reason) or absent, got ${describe(hook)}`,
    );
  }
  if (o.maxWaitMs !== undefined) assertPositiveMs(`${name}.maxWaitMs`, o.maxWaitMs);
  return {
    maxDeliveryAttempts: max,
    onExhausted: hook as ResolvedDeadLetter["onExhausted"],
    maxWaitMs: o.maxWaitMs,
    warnedNoAttempt: false,
  };
}

/**
 * The delivery's attempt as the dead-letter count knows it: a whole number from 1, else
 * undefined (no dead-letter policy: the pull client reports 0, a push sends none).
 */
export function knownAttempt(about: MessageRef): number | undefined {
  const attempt = about.deliveryAttempt;
  return typeof attempt === "number" && Number.isSafeInteger(attempt) && attempt >= 1
    ? attempt
    : undefined;
}

/** True on the attempts that wait for a holder rather than nack. */
export function onLastAttempts(deadLetter: ResolvedDeadLetter, attempt: number): boolean {
  return attempt >= deadLetter.maxDeliveryAttempts - LAST_ATTEMPTS_MARGIN;
}

/**
 * The lock options of a delivery on its last attempts: wait for a held key as long as the
 * surface can hold the delivery, and never less than `waitMs` already allows.
 */
export function lastAttemptOptions(
  lock: ResolvedLockOptions,
  usual: ResolvedLockOptions,
  deadLetter: ResolvedDeadLetter,
  surface: { readonly request: boolean; readonly timeout: RequestTimeout | undefined },
  startedAt: number,
): ResolvedLockOptions {
  const limit = holdLimitMs(surface.request, surface.timeout, deadLetter.maxWaitMs);
  const waitMs = leftOfHold(limit, startedAt);
  return waitMs > usual.waitMs ? { ...lock, waitMs } : usual;
}

/** Once per surface: `deadLetter` is set, but the messages carry no attempt to act on. */
export function warnNoAttempt(
  where: string,
  deadLetter: ResolvedDeadLetter,
  about: MessageRef,
  logger: Logger,
): void {
  if (deadLetter.warnedNoAttempt) return;
  deadLetter.warnedNoAttempt = true;
  logger.warn(
    `${where}: deadLetter is set, but this message carries no deliveryAttempt, so deadLetter cannot act: contention nacks as without it and onExhausted does not run. Pub/Sub sends the attempt only when the subscription has a dead-letter policy (never on an unwrapped push, and the emulator not on push); check the subscription with \`doctor\``,
    deliveryFields("dead_letter_inactive", undefined, about, undefined, {
      maxDeliveryAttempts: deadLetter.maxDeliveryAttempts,
    }),
  );
}

/**
 * A delivery on an attempt Pub/Sub dead-letters (`attempt` ≥ maxDeliveryAttempts): when its
 * outcome is a nack, one ERROR line, then the hook, awaited at most
 * {@link ON_EXHAUSTED_TIMEOUT_MS}. An acked outcome is left alone. Never throws or rejects.
 */
export async function reportExhausted(
  deadLetter: ResolvedDeadLetter,
  input: () => unknown,
  outcome: DeliveryOutcome,
  attempt: number,
  about: MessageRef,
  logger: Logger,
): Promise<void> {
  if (acked(outcome)) return;
  const kind = outcome.kind as NackedOutcome;
  const error = outcome.kind === "failed" ? (outcome.error as Error) : undefined;
  const { maxDeliveryAttempts, onExhausted } = deadLetter;
  const key = outcome.key;
  const message = `delivery attempt ${attempt} of ${maxDeliveryAttempts} ends ${kind} and is nacked: the subscription's dead-letter policy forwards the message to its dead-letter topic`;
  logger.error(
    message,
    deliveryFields("exhausted", key, about, undefined, {
      lastOutcome: kind,
      maxDeliveryAttempts,
      error: error === undefined ? undefined : errorText(error),
    }),
  );
  if (onExhausted === undefined) return;
  const failed = (error: unknown) =>
    logger.error(
      "deadLetter.onExhausted threw; the message is still nacked",
      deliveryFields("hook_failed", key, about, errorText(error)),
    );
  let settled: Promise<unknown>;
  try {
    const reason: ExhaustedReason = {
      outcome: kind,
      key,
      deliveryAttempt: attempt,
      maxDeliveryAttempts,
      error,
      message,
    };
    // Promise.resolve reads a thenable's `then`: a getter that throws lands in the catch.
    settled = Promise.resolve(onExhausted(input(), reason)).then(undefined, failed);
  } catch (error) {
    failed(error);
    return;
  }
  if (!(await settledWithin(settled, ON_EXHAUSTED_TIMEOUT_MS))) {
    logger.warn(
      `deadLetter.onExhausted did not settle within ${ON_EXHAUSTED_TIMEOUT_MS} ms; nacking without waiting for it`,
      deliveryFields("hook_timeout", key, about),
    );
  }
}

/** True when `promise` settles within `ms`; the timer never outlives the race. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
