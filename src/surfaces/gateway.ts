// A surface is built once: its options checked (at deploy, not on the first message), its
// handler's signature read, and what it knows of its messages (the spec) bound into one
// gateway. Per delivery the pipeline only reads the message's own fields.
import { InvalidConfiguration } from "../core/errors.js";
import type { MessageRef } from "../core/logger.js";
import {
  backendName,
  LOCK_OPTION_NAMES,
  type ResolvedLockOptions,
  resolveLockOptions,
  transactionalBackend,
} from "../core/options.js";
import { reportPeerLoading } from "../core/peer.js";
import type { TransactionalLockBackend } from "../core/port.js";
import type { DeliveryTelemetry } from "../core/telemetry/trace.js";
import type { LockOptions, Logger, StepsOption } from "../core/types.js";
import {
  assertFunction,
  booleanOption,
  functionOption,
  knownOptions,
  readOptions,
  readProperty,
} from "../core/validate.js";
import type { step } from "../core/verbs/step.js";
import type { lockInTransaction } from "../core/verbs/transaction.js";
import {
  type DeadLetterOptions,
  type ResolvedDeadLetter,
  resolveDeadLetter,
} from "./dead-letter.js";
import {
  type RequestTimeout,
  resolveRequestTimeout,
  warnLeaseShorterThanTimeout,
} from "./deadline.js";
import type { DeliveryOutcome } from "./delivery-outcome.js";
import { type FingerprintOf, type PublishedPayload, resolveFingerprint } from "./fingerprint.js";

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
   * Catch a second payload under one key: `true` fingerprints the message's data, attributes
   * and ordering key (SHA-256; never its messageId, publishTime or deliveryAttempt), a
   * function names the payload from what the key function receives (undefined: no
   * comparison). A delivery whose fingerprint differs from the one stored with its key is
   * never acked: HTTP push answers 409, the CloudEvent function rejects, pull nacks, and one
   * ERROR line names the key. Use it with a business key (`key`), where a publisher's retry of
   * the same order and a new order under a reused id would otherwise look alike.
   */
  fingerprint?: true | ((input: I) => string | undefined) | undefined;
  /**
   * `true` lets {@link step} record inside the handler, keyed on the delivery's key. Off by
   * default: a handler that calls no step pays nothing for it. See {@link StepsOption}.
   */
  steps?: boolean | undefined;
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
  /**
   * The subscription's dead-letter policy, so contention does not use up its attempts: on a
   * message's last attempts a copy that meets a held key waits for the holder (as long as the
   * surface can hold it) instead of nacking, and `onExhausted` sees the delivery that will be
   * dead-lettered. Needs the `deliveryAttempt` Pub/Sub sends with a dead-letter policy.
   */
  deadLetter?: DeadLetterOptions<I> | undefined;
};

/**
 * A surface's options `O` in transaction mode (`transaction: true`): the handler gets the
 * store's transaction as its second argument, and the message's DONE commits in that same
 * transaction, as {@link lockInTransaction} does: the handler's writes and DONE land
 * together or not at all. The backend must offer transactions (SqlLock, DatastoreLock,
 * FirestoreLock, SpannerLock); `allowUnguarded` is not available (an unkeyed message has no claim to
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
  /** A backend with transactions: SqlLock, DatastoreLock, FirestoreLock, SpannerLock, or your own. */
  backend: TransactionalLockBackend<Tx>;
  /** Run the handler in the store's transaction; DONE commits with its writes. */
  transaction: true;
};

/** One message as its surface read it. The lines about it name its {@link MessageRef} fields. */
export interface Delivery extends MessageRef {
  /** When the request reached us, epoch ms; the wait for a held key stays inside its deadline. */
  readonly startedAt?: number | undefined;
  /** Aborted when the push client gave up before the answer; the handler's signal follows it. */
  readonly clientGone?: AbortSignal | undefined;
}

/** A handler as the gateway keeps it; each surface's spec knows its real signature. */
export type AnyHandler = (...args: never[]) => unknown;

/**
 * What a surface knows of its messages and its handler, the same for every function it
 * builds. `D` is the surface's delivery, `I` what its key function receives.
 */
export interface SurfaceSpec<D extends Delivery, I> {
  /** `idempotentHttp`: in messages and on spans. */
  readonly name: string;
  /** A push surface serves a request with a timeout; the pull surface does not. */
  readonly request: boolean;
  /** Options the surface reads itself (`maxBodyBytes`, `auth`): known, not read here. */
  readonly own?: readonly string[];
  /** The signal's index among the handler's parameters, plain and in transaction mode. */
  readonly signalAt: number;
  readonly transactionSignalAt: number;
  /** What the key function receives. */
  keyInput(delivery: D): I;
  /** The key when there is no key function: the message id, or undefined without one. */
  defaultKey(delivery: D): string | undefined;
  /** Why {@link defaultKey} found none, for the refusal. */
  noDefaultKey(delivery: D): string;
  /** What the message was read as ("a Pub/Sub push envelope"), for reasons. */
  readAs(delivery: D): string;
  /** `traceparent` values in order of preference; the first valid one is the span's parent. */
  traceparents(delivery: D): readonly unknown[];
  /** What the publisher sent, for `fingerprint: true`. */
  payload(delivery: D): PublishedPayload;
  /** Call the handler as the surface documents it. */
  call(handler: AnyHandler, delivery: D, signal: AbortSignal): unknown;
  /** Call it in transaction mode, the store's transaction second. */
  callInTransaction(handler: AnyHandler, delivery: D, tx: unknown, signal: AbortSignal): unknown;
  /**
   * Settle the message inside the delivery's span, answering the outcome telemetry counts
   * (pull: the ack or nack, `ack_failed` when Pub/Sub refuses the ack). Never rejects. A
   * surface without it answers once the delivery returns.
   */
  settle?(
    delivery: D,
    outcome: DeliveryOutcome,
    logger: Logger,
  ): DeliveryOutcome | Promise<DeliveryOutcome>;
}

/** A surface's function, built: its options resolved, its spec and handler bound. */
export interface Gateway<D extends Delivery, I> extends DeliveryTelemetry {
  readonly spec: SurfaceSpec<D, I>;
  readonly handler: AnyHandler;
  readonly lock: ResolvedLockOptions;
  readonly key: ((input: I) => unknown) | undefined;
  readonly onDuplicate: ((key: string) => unknown) | undefined;
  readonly allowUnguarded: boolean;
  /** With `transaction: true` the handler runs in the store's transaction. */
  readonly transaction: boolean;
  /** The push surfaces' request timeout, when known; `waitMs` stays inside it. */
  readonly requestTimeout: RequestTimeout | undefined;
  /** The handler declares its signal parameter (or a heartbeat may abort it). */
  readonly handlerTakesSignal: boolean;
  /** The delivery's fingerprint, when the `fingerprint` option is set. */
  readonly fingerprint: FingerprintOf<D> | undefined;
  /** With `steps: true` the handler runs in a step scope. */
  readonly steps: boolean;
  /** The `deadLetter` option, checked. */
  readonly deadLetter: ResolvedDeadLetter | undefined;
}

const GATEWAY_OPTIONS = [
  "key",
  "onDuplicate",
  "allowUnguarded",
  "transaction",
  "fingerprint",
  "steps",
  "deadLetter",
] as const;
const PUSH_OPTIONS = [...GATEWAY_OPTIONS, "requestTimeoutMs"] as const;

/**
 * Build a surface's gateway: every option checked, with the checks the verbs run plus the
 * surface's own. No I/O: the disabled switch must be able to skip the store entirely. A push
 * surface also learns its request timeout here and warns, once, when the lease is shorter.
 */
export function buildGateway<D extends Delivery, I>(
  spec: SurfaceSpec<D, I>,
  options: unknown,
  handler: unknown,
): Gateway<D, I> {
  const where = `${spec.name}()`;
  const names = spec.request ? PUSH_OPTIONS : GATEWAY_OPTIONS;
  // Every option name is checked once, here, against all the surface takes; the readers
  // of its parts (the verb's, the surface's own) then read only what they know.
  const known = knownOptions([...LOCK_OPTION_NAMES, ...names, ...(spec.own ?? [])], "lock");
  const lock = resolveLockOptions(where, options, known);
  assertFunction(where, "handler", handler);
  const o = readOptions(where, options, false, names, false);
  const arity = readProperty(`${where} handler.length`, handler as object, "length");
  const allowUnguarded = booleanOption("options.allowUnguarded", o.allowUnguarded) ?? false;
  const transaction = booleanOption("options.transaction", o.transaction) ?? false;
  if (transaction) transactionalBackend(where, lock.backend);
  if (transaction && allowUnguarded) {
    throw new InvalidConfiguration(
      `${where} options.allowUnguarded cannot be combined with transaction: true (an unkeyed message has no claim to commit with its writes)`,
    );
  }
  const signalAt = transaction ? spec.transactionSignalAt : spec.signalAt;
  const requestTimeout = spec.request
    ? resolveRequestTimeout(where, o.requestTimeoutMs, lock.logger)
    : undefined;
  if (requestTimeout) warnLeaseShorterThanTimeout(where, lock, requestTimeout);
  // A backend's driver that is not installed: one ERROR line now, not a nack loop found later.
  reportPeerLoading(where, lock.backend, lock.logger);
  return {
    spec,
    handler: handler as AnyHandler,
    lock,
    key: functionOption<(input: I) => unknown>("options.key", o.key),
    onDuplicate: functionOption<(key: string) => unknown>("options.onDuplicate", o.onDuplicate),
    allowUnguarded,
    transaction,
    requestTimeout,
    // As lock() decides for its body: a handler that declares no signal gets a shared,
    // never-aborted one unless a heartbeat may abort it.
    handlerTakesSignal:
      lock.heartbeat !== undefined || (typeof arity === "number" && arity > signalAt),
    fingerprint: resolveFingerprint(
      where,
      o.fingerprint,
      lock.backend,
      spec.payload,
      spec.keyInput,
    ),
    steps: booleanOption("options.steps", o.steps) ?? false,
    deadLetter: resolveDeadLetter(where, o.deadLetter),
    telemetry: lock.telemetry,
    verbName: transaction ? "lockInTransaction" : "lock",
    backendName: backendName(lock.backend, "custom"),
    logger: lock.logger,
  };
}
