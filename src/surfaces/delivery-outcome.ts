// What became of one delivery: the engine's outcome, or one of the endings a delivery meets
// before or without a claim. Each surface maps it to its answer (http.ts: a status, pull.ts:
// ack or nack, cloud-event.ts: resolve or reject); telemetry counts its `kind`.
import type { CycleOutcome } from "../core/engine/outcome.js";
import { deliveryFields, errorStack, errorText, type MessageRef } from "../core/logger.js";
import type { Logger } from "../core/types.js";

/** No key resolved, and `allowUnguarded` is off: refused (fail closed). */
export interface Unkeyed {
  readonly kind: "unkeyed";
  readonly key?: undefined;
  /** The one-line answer: why no key resolved. */
  readonly reason: string;
}

/** The resolved key is one no store can hold (empty, too long, not a string, …): refused. */
export interface UnusableKey {
  readonly kind: "invalid_key";
  readonly key?: undefined;
  /** The one-line answer: what is wrong with the key. */
  readonly reason: string;
}

/** The handler ran without a claim (no key with `allowUnguarded`, or the gateway disabled). */
export interface Unclaimed {
  readonly kind: "unguarded" | "disabled";
  readonly key?: undefined;
}

/** The codes of `@google-cloud/pubsub`'s `AckError`. */
export type AckErrorCode = "PERMISSION_DENIED" | "FAILED_PRECONDITION" | "INVALID" | "OTHER";

/**
 * Pull on an exactly-once subscription: the delivery ended to be acked, but Pub/Sub refused
 * the ack (`ackWithResponse()` rejected with an AckError, or answered other than SUCCESS).
 * The message will be redelivered; the key's DONE record makes that a duplicate.
 */
export interface AckFailed {
  readonly kind: "ack_failed";
  readonly key: string | undefined;
  readonly code: AckErrorCode;
  readonly error: Error;
}

/**
 * What became of one delivery. Acked: `ran`, `fenced_out`, `complete_failed`, `duplicate`,
 * `unguarded`, `disabled` (and `ack_failed`, an ack Pub/Sub refused). Nacked: `held`,
 * `failed`, `payload_mismatch`, `unkeyed`, `invalid_key`. A `failed`
 * delivery's error is always an Error (a thrown non-Error is wrapped in a ThrownValue).
 */
export type DeliveryOutcome = CycleOutcome<unknown> | Unkeyed | UnusableKey | Unclaimed | AckFailed;

/** True when the message is settled: a 2xx, an ack, a resolved promise. */
export function acked(outcome: DeliveryOutcome): boolean {
  switch (outcome.kind) {
    case "held":
    case "failed":
    case "payload_mismatch":
    case "unkeyed":
    case "invalid_key":
      return false;
    default:
      return true;
  }
}

/**
 * The error line of a failed delivery, with its stack, for the surfaces whose caller does
 * not log it (HTTP and pull; functions-framework logs a `cloudEvent` function's throw).
 */
export function logFailure(
  logger: Logger,
  outcome: { readonly error: unknown; readonly inBody: boolean; readonly key: string | undefined },
  about: MessageRef,
): void {
  logger.error(
    outcome.inBody
      ? "the handler threw; nacking"
      : "the delivery failed outside the handler; nacking",
    deliveryFields("failed", outcome.key, about, errorText(outcome.error), {
      stack: errorStack(outcome.error),
    }),
  );
}
