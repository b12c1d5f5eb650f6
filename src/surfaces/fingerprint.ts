// The surfaces' `fingerprint` option: `true` hashes what the publisher sent (data, attributes,
// ordering key: never the messageId, publishTime or deliveryAttempt, which a republish or a
// redelivery changes), a function names the payload itself. Built once per surface.
import { createHash } from "node:crypto";
import { InvalidConfiguration } from "../core/errors.js";
import { requireSupport } from "../core/options.js";
import type { LockBackend } from "../core/port.js";
import { fingerprintOption } from "../core/record-fields.js";
import { describe } from "../core/validate.js";

/** What the publisher sent: the parts `fingerprint: true` hashes. */
export interface PublishedPayload {
  readonly data: Uint8Array;
  readonly attributes: Readonly<Record<string, string>>;
  readonly orderingKey?: string | undefined;
}

/**
 * `sha256:` and the hex SHA-256 of the ordering key and the attributes (sorted by name, as
 * JSON, which holds no raw newline) then a newline and the data's bytes: the same message
 * republished, in any attribute order, gives the same text; any change to what it carries,
 * another.
 */
export function payloadFingerprint(payload: PublishedPayload): string {
  const names = Object.keys(payload.attributes).sort();
  const attributes = names.map((name) => [name, payload.attributes[name]]);
  const head = JSON.stringify([payload.orderingKey ?? "", attributes]);
  return `sha256:${createHash("sha256").update(head).update("\n").update(payload.data).digest("hex")}`;
}

/** A delivery's fingerprint, or undefined for no comparison; a throw fails the delivery. */
export type FingerprintOf<D> = (delivery: D) => string | undefined;

/**
 * The `fingerprint` option checked when the surface is built: `true`, a function of what the
 * key function receives, or absent. Any other value, or a backend that stores no
 * fingerprints, is refused now.
 */
export function resolveFingerprint<D, I>(
  where: string,
  value: unknown,
  backend: LockBackend,
  payload: (delivery: D) => PublishedPayload,
  input: (delivery: D) => I,
): FingerprintOf<D> | undefined {
  if (value === undefined || value === false) return undefined;
  if (value !== true && typeof value !== "function") {
    throw new InvalidConfiguration(
      `${where} options.fingerprint must be true (a hash of the message's data, attributes and ordering key) or a function returning the payload's fingerprint, got ${describe(value)}`,
    );
  }
  requireSupport(where, backend, "fingerprints");
  if (value === true) return (delivery) => payloadFingerprint(payload(delivery));
  const of = value as (input: I) => unknown;
  return (delivery) => fingerprintOption("the fingerprint function's result", of(input(delivery)));
}
