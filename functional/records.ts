/** The records the workers write and the harness reads; shared so both agree on the shape. */
export interface WorkerEvent {
  readonly worker: string;
  readonly pid: number;
  readonly t: number;
  readonly kind: /** The guarded body started. */
    | "body"
    /** The moment before the body sends an order to the supplier (`order` names it). */
    | "sending"
    | "supplied"
    /** The store handed this worker the key (`fence`): a first claim or a reclaim. */
    | "won"
    /** The store accepted this worker's complete (DONE written at `fence`). */
    | "completed"
    | "duplicate"
    | "contention"
    | "release"
    | "fenced_out"
    /**
     * The heartbeat aborted the body's signal: the lease ran out before a renewal confirmed
     * it (a slow store). Not an ending: the body's own outcome follows.
     */
    | "lease_lapsed"
    | "failed"
    /** The gateway could not claim (a store error before the work): nacked, redelivered. */
    | "store_error"
    /** A step's body started (step storm): `step`, `run` (its id), `fence` of the step's claim. */
    | "step_run"
    /**
     * A step returned to its handler (step storm): `value` is what it resolved to, `run` the
     * body run of this call when the body ran here (absent when the result was replayed).
     */
    | "step_done"
    | "crash";
  readonly key: string;
  /** The supplier's order id (`<scenario>/<orderId>`), on "sending". */
  readonly order?: string;
  readonly messageId?: string;
  readonly fence?: number;
  readonly error?: string;
  /** The step storm: the step's name, the body run's id, the step's value. */
  readonly step?: string;
  readonly run?: string;
  readonly value?: string;
  /** On "crash": where the worker killed itself (the step storm names its crash points). */
  readonly point?: string;
}

/** One push as the proxy saw it. */
export interface Delivery {
  readonly scenario: string;
  readonly subscription: string;
  readonly messageId: string;
  readonly worker: number;
  /** The worker's status, or 502 when it died or refused the connection. */
  readonly status: number;
  /** False for the extra copies the proxy sent to other instances at once. */
  readonly answered: boolean;
  /** When the push reached the proxy, and when the worker's answer came back. */
  readonly startedAt: number;
  readonly t: number;
  /**
   * True when the harness, not the emulator, sent this push: the same body again for a
   * nacked message the emulator stopped redelivering (see the proxy).
   */
  readonly repushed?: boolean;
}

/**
 * The scenario a worker key belongs to: the keys are `<scenario>/...`, and a step's key is
 * `["step", <enclosing key>, <name>]` (step() derives it from the delivery's key).
 */
export function scenarioOfKey(key: string): string {
  if (key.startsWith('["step",')) {
    try {
      const parent = (JSON.parse(key) as unknown[])[1];
      return typeof parent === "string" ? scenarioOfKey(parent) : "";
    } catch {
      return "";
    }
  }
  return key.slice(0, Math.max(0, key.indexOf("/")));
}

/** The step storm's steps, in order, and the table (no unique constraint) each one's effect goes to. */
export const STEP_SINKS = {
  charge: "step_charges",
  ship: "step_shipments",
  email: "step_emails",
} as const;
