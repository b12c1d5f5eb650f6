// What the network-fault storm (test/support/network-storm.ts) and its consumers
// (network-storm-child.ts) say to each other, and the counts a consumer keeps: apart from the
// child, whose module runs a consumer when it is imported.

export type StormStore = "redis" | "postgres" | "datastore";

export interface StormChildConfig {
  readonly store: StormStore;
  /** Redis and PostgreSQL: the URL through the proxy. Datastore: the project (the emulator
   * host, the proxy's, is in DATASTORE_EMULATOR_HOST). */
  readonly target: string;
  /** The Redis prefix, the PostgreSQL table or the Datastore namespace of this run. */
  readonly scope: string;
  readonly leaseMs: number;
  /** The body's work lasts a random 0 to bodyMs before its write. */
  readonly bodyMs: number;
  readonly sinkUrl: string;
  /** How long "stop" waits for held deliveries to settle before calling them stuck. */
  readonly drainMs: number;
}

export type StormDelivery = { readonly id: string } | { readonly stop: true };

export type StormReply =
  | { readonly ready: true }
  | { readonly id: string; readonly outcome: "ran" | "duplicate" | "held" | "failed" }
  | { readonly stopped: true; readonly counts: ChildCounts; readonly stuck: number };

export interface ChildCounts {
  /** Bodies that reached their write. */
  bodies: number;
  /** Writes the sink refused as stale. */
  refused: number;
  /** The cycle's alerts: complete fenced out after the body, complete or release failed. */
  fencedOut: number;
  completeFailed: number;
  releaseFailed: number;
  /** Claims whose write landed but whose reply was lost, recognised by their token. */
  recognised: number;
  /** Errors the client reported on its own (a dropped connection), not through a call. */
  clientErrors: number;
}

/** Counts at zero, before a consumer did anything. */
export function noCounts(): ChildCounts {
  return {
    bodies: 0,
    refused: 0,
    fencedOut: 0,
    completeFailed: 0,
    releaseFailed: 0,
    recognised: 0,
    clientErrors: 0,
  };
}
