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
    | "failed"
    /** The gateway could not claim (a store error before the work): nacked, redelivered. */
    | "store_error"
    | "crash";
  readonly key: string;
  /** The supplier's order id (`<scenario>/<orderId>`), on "sending". */
  readonly order?: string;
  readonly messageId?: string;
  readonly fence?: number;
  readonly error?: string;
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

/** The scenario a worker key belongs to: the keys are `<scenario>/...`. */
export function scenarioOfKey(key: string): string {
  return key.slice(0, Math.max(0, key.indexOf("/")));
}
