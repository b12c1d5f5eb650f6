// How the pull surface settles a message: ack() / nack(), or, where the message offers them,
// ackWithResponse() / nackWithResponse(), which on an exactly-once subscription wait for
// Pub/Sub's answer. `@google-cloud/pubsub` decides per call from the subscription's live
// exactly-once flag (sent with every StreamingPull response): on any other subscription the
// same methods ack or nack at once and answer SUCCESS. So calling them is the detection.
import { deliveryFields, errorText, type MessageRef } from "../core/logger.js";
import type { Logger } from "../core/types.js";
import {
  type AckErrorCode,
  type AckFailed,
  acked,
  type DeliveryOutcome,
} from "./delivery-outcome.js";

/**
 * `auto`: the *WithResponse methods when the message has them, else ack()/nack();
 * `confirmed` (`exactlyOnce: true`): the same, and a message without them is an error line;
 * `plain` (`exactlyOnce: false`): ack()/nack() only, as before exactly-once existed.
 */
export type SettleMode = "auto" | "confirmed" | "plain";

/** The mode the `exactlyOnce` option asks for (already checked to be a boolean or undefined). */
export function settleMode(exactlyOnce: boolean | undefined): SettleMode {
  if (exactlyOnce === undefined) return "auto";
  return exactlyOnce ? "confirmed" : "plain";
}

/** The codes of `@google-cloud/pubsub`'s AckError (its AckResponses, SUCCESS aside). */
const ACK_ERROR_CODES: ReadonlySet<string> = new Set<AckErrorCode>([
  "PERMISSION_DENIED",
  "FAILED_PRECONDITION",
  "INVALID",
  "OTHER",
]);

/**
 * Ack or nack one message as its outcome says ({@link acked}). Never rejects or throws: an
 * unhandled rejection would crash the worker. A refused ack becomes the `ack_failed` outcome
 * (with one log line); a refused nack is logged and the outcome stands (the ack deadline
 * redelivers the message either way). Synchronous unless there is an answer to wait for.
 */
export function settlePulled(
  message: unknown,
  outcome: DeliveryOutcome,
  mode: SettleMode,
  about: MessageRef,
  logger: Logger,
): DeliveryOutcome | Promise<DeliveryOutcome> {
  const ack = acked(outcome);
  const verb = ack ? "ack" : "nack";
  try {
    const method = mode === "plain" ? undefined : withResponse(message, verb);
    if (method !== undefined) return confirmed(message, method, ack, outcome, about, logger);
    if (mode === "confirmed") missingMethod(verb, outcome.key, about, logger);
    plain(message, verb);
  } catch (error) {
    settleFailed(error, outcome, about, logger);
  }
  return outcome;
}

/** Settle through `ackWithResponse` / `nackWithResponse` and read Pub/Sub's answer. */
async function confirmed(
  message: unknown,
  method: () => unknown,
  ack: boolean,
  outcome: DeliveryOutcome,
  about: MessageRef,
  logger: Logger,
): Promise<DeliveryOutcome> {
  let refused: { code: AckErrorCode; error: Error };
  try {
    const answer: unknown = await method.call(message);
    if (answer === "SUCCESS") return outcome;
    refused = answered(ack ? "ack" : "nack", answer);
  } catch (error) {
    const code = ackErrorCode(error);
    if (code === undefined) {
      settleFailed(error, outcome, about, logger);
      return outcome;
    }
    refused = { code, error: error as Error };
  }
  if (ack) return ackFailed(outcome, refused.code, refused.error, about, logger);
  logger.warn(
    "Pub/Sub refused the nack; the message comes back when its ack deadline passes",
    deliveryFields("settle_failed", outcome.key, about, errorText(refused.error), {
      ackError: refused.code,
    }),
  );
  return outcome;
}

/** ack()/nack() itself threw (a closed channel, a broken message-like): the lease expiry redelivers it. */
function settleFailed(
  error: unknown,
  outcome: DeliveryOutcome,
  about: MessageRef,
  logger: Logger,
): void {
  logger.error(
    "settling the message failed",
    deliveryFields("settle_failed", outcome.key, about, errorText(error)),
  );
}

/** The message's `ackWithResponse` / `nackWithResponse`, when it has one. */
function withResponse(message: unknown, verb: "ack" | "nack"): (() => unknown) | undefined {
  const method: unknown = (message as Record<string, unknown>)[
    verb === "ack" ? "ackWithResponse" : "nackWithResponse"
  ];
  return typeof method === "function" ? (method as () => unknown) : undefined;
}

function plain(message: unknown, verb: "ack" | "nack"): void {
  const method: unknown = (message as Record<string, unknown>)[verb];
  if (typeof method !== "function") throw new TypeError(`message.${verb} is not a function`);
  method.call(message);
}

function missingMethod(
  verb: "ack" | "nack",
  key: string | undefined,
  about: MessageRef,
  logger: Logger,
): void {
  logger.error(
    `options.exactlyOnce is true, but the message has no ${verb}WithResponse(); settling it with ${verb}() and no confirmation`,
    deliveryFields(
      "settle_failed",
      key,
      about,
      "pass the Message of @google-cloud/pubsub (>= 3.2), or leave exactlyOnce unset",
    ),
  );
}

/** A resolved answer other than SUCCESS (INVALID: the message was already settled). */
function answered(verb: "ack" | "nack", answer: unknown): { code: AckErrorCode; error: Error } {
  const known = typeof answer === "string" && ACK_ERROR_CODES.has(answer);
  const code = known ? (answer as AckErrorCode) : "OTHER";
  const shown = known ? answer : typeof answer === "string" ? "an unknown answer" : typeof answer;
  const detail =
    code === "INVALID" ? " (the message was already acked or nacked, by the handler?)" : "";
  return { code, error: new Error(`${verb}WithResponse() answered ${shown}${detail}`) };
}

/** The code of an `AckError` (read as hostile input: any object with a known `errorCode`). */
function ackErrorCode(error: unknown): AckErrorCode | undefined {
  try {
    if (error === null || typeof error !== "object") return undefined;
    const code: unknown = (error as { errorCode?: unknown }).errorCode;
    return typeof code === "string" && ACK_ERROR_CODES.has(code)
      ? (code as AckErrorCode)
      : undefined;
  } catch {
    return undefined;
  }
}

function ackFailed(
  outcome: DeliveryOutcome,
  code: AckErrorCode,
  error: Error,
  about: MessageRef,
  logger: Logger,
): AckFailed {
  const { key } = outcome;
  // Where the key's DONE record stands (or another holder's claim), the redelivery is a
  // duplicate; where none was written, the handler runs again.
  const guarded =
    outcome.kind === "ran" || outcome.kind === "duplicate" || outcome.kind === "fenced_out";
  const fields = deliveryFields("ack_failed", key, about, errorText(error), { ackError: code });
  if (guarded) {
    logger.warn("Pub/Sub refused the ack; its redelivery will be skipped as a duplicate", fields);
  } else {
    logger.error(
      `Pub/Sub refused the ack of a ${outcome.kind} delivery; its redelivery runs the handler again`,
      fields,
    );
  }
  return { kind: "ack_failed", key, code, error };
}
