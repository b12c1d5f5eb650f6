// step(): once() inside a running body, keyed on the nearest de-duplicating key and the
// step's name, with that body's backend and options. A redelivery of a half-done handler
// replays the steps that finished and runs the rest.
import { createHash } from "node:crypto";
import { MAX_KEY_BYTES } from "../constants.js";
import { runCycle } from "../engine/cycle.js";
import { InvalidConfiguration } from "../errors.js";
import { requireSupport } from "../options.js";
import { storableText } from "../record-fields.js";
import { traceCycle } from "../telemetry/trace.js";
import type { GuardedBody, StepsOption } from "../types.js";
import { assertFunction, describe } from "../validate.js";
import { codecOption, DEFAULT_MAX_RESULT_BYTES, type ResultCodec, recordResult } from "./result.js";
import { replayed } from "./run-verb.js";
import { currentScope, scopedBody } from "./scope.js";

/**
 * Options of {@link step}.
 *
 * @example
 * ```ts
 * import type { StepOptions } from "gcp-pubsub-idempotency";
 *
 * const options: StepOptions<Date> = {
 *   codec: { encode: (d) => d.toISOString(), decode: (t) => new Date(t) },
 * };
 * ```
 */
export interface StepOptions<T> {
  /** How the result becomes text and back; default JSON. */
  codec?: ResultCodec<T> | undefined;
}

const encoder = new TextEncoder();

/**
 * The key of step `name` under `parent`: the JSON array `["step", parent, name]`, so two
 * different pairs never share a record; its SHA-256 (`step-sha256:` + hex) when that would
 * not fit the key rule's {@link MAX_KEY_BYTES}.
 *
 * @example
 * ```ts
 * import { stepKey } from "gcp-pubsub-idempotency";
 *
 * // The record of the "charge" step of message 4711, for `gcp-pubsub-idempotency inspect`.
 * console.log(stepKey("4711", "charge")); // ["step","4711","charge"]
 * ```
 */
export function stepKey(parent: string, name: string): string {
  const key = JSON.stringify(["step", parent, name]);
  if (key.length * 3 <= MAX_KEY_BYTES || encoder.encode(key).length <= MAX_KEY_BYTES) return key;
  return `step-sha256:${createHash("sha256").update(key).digest("hex")}`;
}

/**
 * Run `body` at most once per delivery of the enclosing body, and resolve to its result every
 * time: inside the body of {@link lock}, {@link once} or {@link lockInTransaction}, or inside
 * a surface's handler, given `steps: true` (see {@link StepsOption}), `step("charge", …)` is {@link once} on a key made of the enclosing key
 * (the delivery's, or the innermost lock or once) and `"charge"`, with the enclosing backend,
 * lease, heartbeat, logger and telemetry. When a handler fails after a step, its redelivery
 * gets the step's recorded result back instead of running it again, and goes on.
 *
 * - A name used twice in one run is refused ({@link InvalidConfiguration}): each step needs a
 *   name of its own (`email:${i}` in a loop); a reused name would silently skip the second.
 * - A {@link mutex} does not scope steps (its key is shared by distinct messages): inside one,
 *   the step keys on the de-duplicating key around it; with only a mutex around, it is refused.
 * - Outside a body that records steps it throws {@link InvalidConfiguration} naming
 *   `steps: true`; with no body at all, use `once(key, …)`.
 * - Where a surface runs its handler without a claim (`GCP_PUBSUB_IDEMPOTENCY_DISABLED`, or an
 *   unkeyed message with `allowUnguarded`), a step runs its body directly, unrecorded, with a
 *   claim of fence 0: the whole handler is unguarded then.
 * - The step's result is recorded as once() records it (JSON unless `options.codec`); one too
 *   large or not encodable completes the step and a later run rejects {@link Duplicate}.
 * - A step that throws records nothing; its error propagates to the enclosing body.
 *
 * @example
 * ```ts
 * import { idempotentMessage, InMemoryLock, step } from "gcp-pubsub-idempotency";
 *
 * declare function charge(orderId: string): Promise<{ chargeId: string }>;
 * declare function ship(orderId: string, chargeId: string): Promise<void>;
 * const options = { backend: new InMemoryLock(), steps: true };
 * export const onMessage = idempotentMessage(options, async (message) => {
 *   const orderId = message.attributes?.orderId ?? "";
 *   const { chargeId } = await step("charge", () => charge(orderId)); // replayed on a retry
 *   await step("ship", () => ship(orderId, chargeId));
 * });
 * ```
 */
export async function step<T>(
  name: string,
  body: GuardedBody<T>,
  options?: StepOptions<T>,
): Promise<T> {
  if (typeof name !== "string" || name.length === 0 || !storableText(name)) {
    throw new InvalidConfiguration(
      `step() name must be a non-empty, well-formed string, got ${describe(name)}`,
    );
  }
  assertFunction("step()", "body", body);
  const scope = currentScope();
  if (scope === undefined) {
    throw new InvalidConfiguration(
      `step(${JSON.stringify(name)}) ran outside any body that records steps: pass \`steps: true\` to the lock(), once() or lockInTransaction() around it, or to the surface whose handler calls it (a mutex never scopes steps); elsewhere use once(key, options, body)`,
    );
  }
  scope.names ??= new Set();
  if (scope.names.has(name)) {
    throw new InvalidConfiguration(
      `step(${JSON.stringify(name)}) was already used in this run of the body keyed ${JSON.stringify(scope.key)}: give each step a name of its own (e.g. \`${name}:\${i}\` in a loop)`,
    );
  }
  scope.names.add(name);
  if (scope.key === undefined || scope.options === undefined) return runUnrecorded(name, body);
  const codec = codecOption<T>(options?.codec);
  const supports = requireSupport("step()", scope.options.backend, "results");
  const maxBytes = Math.min(DEFAULT_MAX_RESULT_BYTES, supports.maxResultBytes);
  const key = stepKey(scope.key, name);
  // Its own lease, never a wait: the enclosing claim keeps other runs out, and a step still
  // held is a run that outlived its lease — InProgress, and the delivery is retried.
  const stepOptions = scope.options.waitMs === 0 ? scope.options : { ...scope.options, waitMs: 0 };
  const outcome = await traceCycle(
    {
      mode: "once",
      key,
      options: stepOptions,
      body: scopedBody(body, key, stepOptions, scope.message),
      bodyTakesSignal: body.length > 1,
      message: scope.message,
      signal: undefined,
      record: (value: T) => recordResult(value, codec, maxBytes),
    },
    runCycle,
  );
  return replayed(outcome, codec);
}

/** A never-aborted signal for steps run without a claim. */
const UNRECORDED_SIGNAL = new AbortController().signal;

/** A step where its handler runs without a claim: the body, as it is, with a claim of fence 0. */
async function runUnrecorded<T>(name: string, body: GuardedBody<T>): Promise<T> {
  return body(
    { key: name, fencingId: 0, leaseExpiresAt: Number.POSITIVE_INFINITY },
    UNRECORDED_SIGNAL,
  );
}
