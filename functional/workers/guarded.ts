/**
 * What every worker of the fleet shares, whatever its server: the DatastoreLock, the key, the
 * guarded body (a call to the supplier) and the record of what happened, one JSON line per
 * event appended synchronously to this worker's file, so a SIGKILL loses nothing written.
 *
 * Configured by the harness through the environment (see WorkerEnv in ../fleet.ts).
 */
import { appendFileSync } from "node:fs";
import type { Request, Response } from "express";
import {
  InProgress,
  idempotentHttp,
  type LockBackend,
  type Logger,
  mutex,
  type ParsedMessage,
  type TransactionalLockBackend,
} from "gcp-pubsub-idempotency";
import { DatastoreLock } from "gcp-pubsub-idempotency/datastore";
import { SqlLock } from "gcp-pubsub-idempotency/sql";
import pg from "pg";
import { sendOrder } from "../../test/support/supplier.js";
import type { WorkerEvent } from "../records.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`worker: ${name} is not set`);
  return value;
}

const worker = required("FUNCTIONAL_WORKER");
const eventsFile = required("FUNCTIONAL_EVENTS_FILE");
const supplierUrl = required("FUNCTIONAL_SUPPLIER_URL");
export const leaseMs = Number(required("FUNCTIONAL_LEASE_MS"));
/**
 * The PO mutex's lease. Longer than the gateway's: on the emulator, reclaim transactions
 * that contend for one record wait out lock timeouts of seconds, so a 2 s lease can lapse
 * before claim() even returns, and a mutex (which has no complete to fence) would overlap.
 */
const mutexLeaseMs = Math.max(leaseMs, 15_000);
/** Chance that a crashable body kills its own process between the supplier call and complete. */
const crashChance = Number(process.env.FUNCTIONAL_CRASH_CHANCE ?? "0");

export function record(event: Omit<WorkerEvent, "worker" | "pid" | "t">): void {
  const line: WorkerEvent = { worker, pid: process.pid, t: Date.now(), ...event };
  appendFileSync(eventsFile, `${JSON.stringify(line)}\n`);
}

export const store = new DatastoreLock({
  projectId: required("GCLOUD_PROJECT"),
  namespace: required("FUNCTIONAL_NAMESPACE"),
});

/**
 * A store as the gateway sees it, recording each win (with its fence: the harness tells a
 * first claim from a reclaim), each complete the store accepted and each release.
 */
type Recorded = Required<Pick<LockBackend, "claim" | "complete" | "release" | "renew">>;
function recorded(inner: Recorded): Recorded {
  return {
    async claim(key, ms) {
      const outcome = await inner.claim(key, ms);
      if (outcome.status === "won") record({ kind: "won", key, fence: outcome.claim.fencingId });
      return outcome;
    },
    async complete(claim) {
      const completed = await inner.complete(claim);
      if (completed) record({ kind: "completed", key: claim.key, fence: claim.fencingId });
      return completed;
    },
    async release(claim) {
      record({ kind: "release", key: claim.key, fence: claim.fencingId });
      await inner.release(claim);
    },
    renew: (claim, ms) => inner.renew(claim, ms),
  };
}

/**
 * The control of `--lock none`: a lock that excludes nothing. Every claim wins with a new
 * fence and every complete lands, so each copy of an order runs its body; the storm's
 * checks must fail on it.
 */
function excludesNothing(): Recorded {
  let fence = Date.now() * 1_000;
  return {
    claim: async (key, ms) => ({
      status: "won",
      claim: { key, fencingId: ++fence, leaseExpiresAt: Date.now() + ms },
    }),
    complete: async () => true,
    release: async () => {},
    renew: async () => true,
  };
}

const lockChoice = process.env.FUNCTIONAL_LOCK ?? "datastore";
if (lockChoice !== "datastore" && lockChoice !== "none")
  throw new Error(`worker: FUNCTIONAL_LOCK must be datastore or none, not ${lockChoice}`);

export const backend: LockBackend = recorded(lockChoice === "none" ? excludesNothing() : store);

/**
 * The transactional sink's store: SqlLock on the harness's PostgreSQL database, whose
 * `orders` table (no unique constraint) the body writes with plain INSERTs in the same
 * transaction as DONE.
 */
export const pool = new pg.Pool({ connectionString: required("FUNCTIONAL_DATABASE_URL"), max: 8 });
// A connection cut while idle (the harness's SIGKILLs only hit this process) must not crash it.
pool.on("error", () => {});
const sqlStore = new SqlLock({ client: pool, table: "idempotency_records" });
export const transactionalBackend: TransactionalLockBackend<pg.PoolClient> = {
  ...recorded(sqlStore),
  async completeInTransaction(claim, body) {
    const outcome = await sqlStore.completeInTransaction(claim, body);
    if (outcome.completed) record({ kind: "completed", key: claim.key, fence: claim.fencingId });
    return outcome;
  },
};

/** Pushes of the transactional sink's topics (`txn-<run>`) go to its own handler. */
const TRANSACTION_TOPIC = "/topics/txn-";

/**
 * The idempotency key. `scenario` is the publisher's stream name, the same for every
 * subscription, so two subscriptions on one topic share a key; `keyBy=order` keys on the
 * business id, so a republished order (a new messageId) is still the same key.
 */
export function keyOf(message: ParsedMessage): string {
  const { scenario = "none", keyBy, orderId } = message.attributes;
  return keyBy === "order" && orderId
    ? `${scenario}/order:${orderId}`
    : `${scenario}/msg:${message.messageId}`;
}

/** Sorts the gateway's log lines into the worker's record; prints nothing. */
export const logger: Logger = {
  info() {},
  warn(_message, fields) {
    if (fields?.outcome === "held") record({ kind: "contention", key: String(fields.key ?? "") });
  },
  error(message, fields) {
    if (fields?.outcome === "fenced_out") record({ kind: "fenced_out", key: String(fields.key) });
    else if (fields?.outcome === "lease_lapsed")
      record({ kind: "lease_lapsed", key: String(fields.key) });
    // The body records its own failures (the cloudEvent surface never logs them here).
    else if (!message.startsWith("the handler threw"))
      record({
        kind: message.startsWith("the delivery failed outside the handler")
          ? "store_error"
          : "failed",
        key: String(fields?.key ?? ""),
        messageId: String(fields?.messageId ?? ""),
        error: `${message}: ${String(fields?.reason)}`,
      });
  },
};

export const onDuplicate = (key: string): void => record({ kind: "duplicate", key });

/** The gateway options every surface of the fleet shares; the backend comes with the sink. */
export const gatewayOptions = { leaseMs, heartbeat: true, logger, onDuplicate } as const;

/** Whether a push (its path, or a CloudEvent's source) belongs to the transactional sink. */
export const isTransactionPush = (where: string): boolean => where.includes(TRANSACTION_TOPIC);

/**
 * Both sinks behind one HTTP handler, for the Express services and the functions-framework's
 * http signature alike: the supplier's pushes through `idempotentHttp` on DatastoreLock, the
 * transactional sink's through `idempotentHttp` in transaction mode on SqlLock.
 */
export function ordersHttp(): (req: Request, res: Response) => Promise<void> {
  const key = ({ message }: { message: ParsedMessage }) => keyOf(message);
  const supplied = idempotentHttp<Request, Response>(
    { ...gatewayOptions, backend, key },
    (message) => placeOrder(message),
  );
  const transactional = idempotentHttp<Request, Response, pg.PoolClient>(
    { ...gatewayOptions, backend: transactionalBackend, transaction: true, key },
    (message, tx) => insertOrder(message, tx),
  );
  return (req, res) => (isTransactionPush(req.path) ? transactional : supplied)(req, res);
}

/** The guarded body: what must happen once per key. */
export async function placeOrder(message: ParsedMessage): Promise<void> {
  const { scenario = "none", orderId = message.messageId, po, crashable } = message.attributes;
  const key = keyOf(message);
  record({ kind: "body", key, messageId: message.messageId });
  try {
    await callSupplier(message, scenario, orderId, po);
  } catch (error) {
    // A mutex still held after waitMs is contention on the PO (a nack), not a fault.
    record({
      kind: error instanceof InProgress ? "contention" : "failed",
      key,
      error: String(error),
    });
    throw error;
  }
  record({ kind: "supplied", key });
  if (crashable && Math.random() < crashChance) {
    // The crash window "key your sink" closes: sent, not yet completed.
    record({ kind: "crash", key });
    process.kill(process.pid, "SIGKILL");
  }
}

/**
 * The transactional body: one plain INSERT into `orders`, in the transaction that commits
 * the key's DONE. A crashable order may kill this process after the INSERT, before the
 * commit: the server rolls the row back with the unfinished transaction.
 */
export async function insertOrder(message: ParsedMessage, tx: pg.PoolClient): Promise<void> {
  const { orderId = message.messageId, crashable } = message.attributes;
  const key = keyOf(message);
  record({ kind: "body", key, messageId: message.messageId });
  await tx.query({
    name: "functional_insert_order",
    text: "INSERT INTO orders (order_id, message_id, worker) VALUES ($1, $2, $3)",
    values: [orderId, message.messageId, worker],
  });
  if (crashable && Math.random() < crashChance) {
    // Inserted, DONE not yet written, nothing committed.
    record({ kind: "crash", key });
    process.kill(process.pid, "SIGKILL");
  }
}

async function callSupplier(
  message: ParsedMessage,
  scenario: string,
  orderId: string,
  po: string | undefined,
): Promise<void> {
  if (message.attributes.poison) throw new Error("poison message: this body always fails");
  const behaviour = JSON.parse(message.text() || "{}") as { holdMs?: number; failFirst?: number };
  // The supplier's key is the business key: a re-send after a crash is a no-op there.
  const supplierKey = `${scenario}/${orderId}`;
  const send = () => {
    record({ kind: "sending", key: keyOf(message), order: supplierKey });
    return sendOrder(supplierUrl, supplierKey, supplierKey, {
      ...behaviour,
      ...(po ? { entity: po } : {}),
    });
  };
  if (po) {
    // Updates of one PO one at a time; the messageId lock around this makes each apply once.
    await mutex(
      `${scenario}/po:${po}`,
      { backend: store, leaseMs: mutexLeaseMs, waitMs: 3_000, logger },
      send,
    );
  } else {
    await send();
  }
}

/** The harness ends a worker by closing its IPC channel (or by SIGKILL). */
process.on("disconnect", () => process.exit(0));
