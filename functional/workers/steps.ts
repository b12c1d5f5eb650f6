/**
 * The step storm's handler (issue 30): charge → ship → email, each step's effect one plain
 * INSERT into its own PostgreSQL table (`step_charges`, `step_shipments`, `step_emails`: no
 * unique constraint, nothing de-duplicates), the ship step given the charge's result (a
 * charge id the charge step made at random) and the email step the ship's. Behind every
 * surface of the fleet, on two stores: SqlLock (`step_records`, the harness's PostgreSQL
 * database) for the `steps-sql` topic and DatastoreLock (the emulator) for `steps-datastore`.
 *
 * FUNCTIONAL_STEPS picks the handler: `step` wraps each step in step(), `lock` (the control)
 * runs them inline under the surface's lock alone, as a handler without step() does.
 *
 * A message whose `crashAt` attribute names a crash point kills its worker there, once (the
 * first delivery that reaches it: a marker file in FUNCTIONAL_STEP_CRASH_DIR says it did):
 * before the first step, inside a step after its effect (`in:<step>`), between two steps
 * (`charge|ship`, `ship|email`), or after the last step, before the surface completes (`after`).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import type { CloudEvent } from "@google-cloud/functions-framework";
import type { Request, Response } from "express";
import {
  type Claim,
  InProgress,
  InvalidConfiguration,
  idempotent,
  idempotentHttp,
  type LockBackend,
  type ParsedMessage,
  parseCloudEvent,
  step,
} from "gcp-pubsub-idempotency";
import { SqlLock } from "gcp-pubsub-idempotency/sql";
import { STEP_SINKS } from "../records.js";
import { gatewayOptions, keyOf, pool, record, store } from "./guarded.js";

type StepName = keyof typeof STEP_SINKS;

const mode = process.env.FUNCTIONAL_STEPS ?? "step";
if (mode !== "step" && mode !== "lock")
  throw new Error(`worker: FUNCTIONAL_STEPS must be step or lock, not ${mode}`);
const crashDir = process.env.FUNCTIONAL_STEP_CRASH_DIR;

/**
 * A store as the gateway and step() see it, recording each win, each complete the store
 * accepted and each release (step keys too), and passing everything through: the claim's
 * options, the complete's result and what the store supports.
 */
function recordedWithResults(inner: LockBackend): LockBackend {
  return {
    supports: inner.supports,
    async claim(key, ms, options) {
      const outcome = await (options === undefined
        ? inner.claim(key, ms)
        : inner.claim(key, ms, options));
      if (outcome.status === "won") record({ kind: "won", key, fence: outcome.claim.fencingId });
      return outcome;
    },
    async complete(claim, result) {
      const completed = await (result === undefined
        ? inner.complete(claim)
        : inner.complete(claim, result));
      if (completed) record({ kind: "completed", key: claim.key, fence: claim.fencingId });
      return completed;
    },
    async release(claim) {
      record({ kind: "release", key: claim.key, fence: claim.fencingId });
      await inner.release(claim);
    },
    renew: (claim, ms) => inner.renew?.(claim, ms) ?? Promise.resolve(true),
  };
}

const backends = {
  sql: recordedWithResults(new SqlLock({ client: pool, table: "step_records" })),
  datastore: recordedWithResults(store),
};

/** Kill this worker at `point` when the message asks for it and no worker has yet. */
function crashPoint(message: ParsedMessage, key: string, point: string): void {
  if (message.attributes.crashAt !== point || crashDir === undefined) return;
  try {
    closeSync(openSync(join(crashDir, key.replaceAll("/", "_")), "wx"));
  } catch {
    return; // crashed here before
  }
  record({ kind: "crash", key, point, messageId: message.messageId });
  process.kill(process.pid, "SIGKILL");
}

/** One step: its body makes a result, writes its effect (an arrival) and returns the result. */
async function runStep(
  message: ParsedMessage,
  key: string,
  name: StepName,
  seen: string,
): Promise<string> {
  let ran: string | undefined;
  let inBody = false;
  const body = async (claim?: Claim): Promise<string> => {
    const run = randomUUID();
    ran = run;
    record({
      kind: "step_run",
      key,
      step: name,
      run,
      ...(claim ? { fence: claim.fencingId } : {}),
    });
    try {
      const made = `${name}-${randomBytes(6).toString("hex")}`;
      await pool.query({
        name: `step_sink_${name}`,
        text: `INSERT INTO ${STEP_SINKS[name]} (key, run, seen, made, worker, pid) VALUES ($1, $2, $3, $4, $5, $6)`,
        values: [key, run, seen, made, process.env.FUNCTIONAL_WORKER, process.pid],
      });
      crashPoint(message, key, `in:${name}`);
      return made;
    } catch (error) {
      inBody = true;
      record({ kind: "failed", key, step: name, run, error: String(error) });
      throw error;
    }
  };
  try {
    const value = mode === "step" ? await step(name, (claim) => body(claim)) : await body();
    record({ kind: "step_done", key, step: name, value, ...(ran ? { run: ran } : {}) });
    return value;
  } catch (error) {
    if (!inBody)
      record({
        // A step still held (its holder died; the lease not yet lapsed) or a store error is
        // retried with the delivery; a step refused by the store's configuration is a fault.
        kind:
          error instanceof InProgress
            ? "contention"
            : error instanceof InvalidConfiguration
              ? "failed"
              : "store_error",
        key,
        messageId: message.messageId,
        error: String(error),
      });
    throw error;
  }
}

/** The handler: three steps, each after the first given the one before's result. */
async function threeSteps(message: ParsedMessage): Promise<void> {
  const key = keyOf(message);
  record({ kind: "body", key, messageId: message.messageId });
  crashPoint(message, key, "before");
  const charge = await runStep(message, key, "charge", "");
  crashPoint(message, key, "charge|ship");
  const shipment = await runStep(message, key, "ship", charge);
  crashPoint(message, key, "ship|email");
  await runStep(message, key, "email", shipment);
  crashPoint(message, key, "after");
}

/** Pushes of the step storm's topics (`steps-sql-<run>`, `steps-datastore-<run>`). */
export const isStepsPush = (where: string): boolean => where.includes("/topics/steps-");
const storeOf = (where: string) => (where.includes("/topics/steps-sql-") ? "sql" : "datastore");

export function stepsHttp(): (req: Request, res: Response) => Promise<void> {
  const key = ({ message }: { message: ParsedMessage }) => keyOf(message);
  const surfaces = {
    sql: idempotentHttp<Request, Response>(
      { ...gatewayOptions, backend: backends.sql, key, steps: true },
      threeSteps,
    ),
    datastore: idempotentHttp<Request, Response>(
      { ...gatewayOptions, backend: backends.datastore, key, steps: true },
      threeSteps,
    ),
  };
  return (req, res) => surfaces[storeOf(req.path)](req, res);
}

export function stepsCloudEvent(): (event: CloudEvent<unknown>) => Promise<void> {
  const key = (event: CloudEvent<unknown>) => keyOf(parseCloudEvent(event));
  const handler = (event: CloudEvent<unknown>) => threeSteps(parseCloudEvent(event));
  const surfaces = {
    sql: idempotent({ ...gatewayOptions, backend: backends.sql, key, steps: true }, handler),
    datastore: idempotent(
      { ...gatewayOptions, backend: backends.datastore, key, steps: true },
      handler,
    ),
  };
  return (event) => surfaces[storeOf(String(event.source))](event);
}
