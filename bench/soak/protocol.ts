// What the soak's two processes say to each other over the fork's IPC channel: the server
// process (the library under test, measured) and the load process (the push client).

/** The server's answer to each kind of push; anything else is an unexpected status. */
export const EXPECTED = {
  /** A first delivery, a duplicate, a redelivery after a failure or a 503. */
  delivered: 204,
  /** The copy that met a key in flight (waitMs 0); a 204 when the holder had finished. */
  contended: [503, 204],
  /** The handler threw on the first attempt. */
  failed: 500,
  /** A refused token: 401 for a token that proves nothing, 403 for the wrong identity. */
  refused: [401, 403],
} as const;

/** Sent once to the load process: where to push, and the Authorization values to use. */
export interface LoadConfig {
  readonly type: "config";
  readonly url: string;
  readonly pushes: number;
  readonly interval: number;
  /** Pushes in flight at once (and keep-alive sockets). */
  readonly concurrency: number;
  /** Valid `Bearer` values; the load rotates through them, more than the verifier keeps. */
  readonly tokens: readonly string[];
  /** A new valid token after this many pushes. */
  readonly tokenEvery: number;
  /** Refused `Authorization` values (undefined: no header). */
  readonly forged: readonly (string | null)[];
  /** Message ids start with it, so no run meets another's keys. */
  readonly runId: string;
}

/** Sent by the load process when an interval's pushes have all been answered. */
export interface IntervalDone {
  readonly type: "interval";
  /** Pushes answered since the start. */
  readonly pushes: number;
  /** Distinct keys whose handler must have succeeded once, since the start. */
  readonly keys: number;
  readonly seconds: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Answers by status since the start, and the statuses no push of its kind expects. */
  readonly statuses: Readonly<Record<string, number>>;
  readonly unexpected: readonly string[];
}

/**
 * The server's go-ahead once it has measured itself at rest (after the last interval: leave),
 * with the refused values made anew: a token "ten minutes ahead" must not become valid during
 * a long run.
 */
export interface Resume {
  readonly type: "resume";
  readonly forged: readonly (string | null)[];
}

export type ToLoad = LoadConfig | Resume;
export type FromLoad = IntervalDone;
