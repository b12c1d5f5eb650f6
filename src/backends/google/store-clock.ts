// What DatastoreLock and FirestoreLock know of their store's clock: bounds on its time now,
// learned from the times the store stamps its answers with (read times, commit times), so
// that a lease is judged in the store's time, whatever the offset of this process's clock.
import { storeMillis } from "./store-timestamp.js";

/**
 * How far apart the rates of this process's monotonic clock and the store's may be: 1,000
 * ppm, twice the most NTP ever slews a clock (500 ppm). The bounds widen by this much of the
 * time since they were learned.
 */
export const MAX_DRIFT = 1e-3;

/** A moment of this process: its monotonic clock and its wall clock, read together (ms). */
export interface Stamp {
  readonly mono: number;
  readonly wall: number;
}

/** The store's time now, as whole-ms bounds: the true time lies in [earliest, latest]. */
export interface StoreTime {
  readonly earliest: number;
  readonly latest: number;
}

/**
 * Where a Google lock gets its time from. Each request is stamped before it is sent; each
 * time the store answers with is learned. `StoreClock` is the one the locks use; the tests
 * put a clock of the process in its place (the judgement before issue 32) to show what it
 * lets happen.
 */
export interface LeaseClock {
  /** This process's moment, read just before a request is sent. */
  stamp(): Stamp;
  /** Bounds on the store's time now; undefined until both were learned. */
  now(): StoreTime | undefined;
  /**
   * Learn from a time the store stamped its answer to a request sent at `sent` with: a
   * `read` time (at most the store's time when the answer arrived) or a `write` time (a
   * commit: at least its time when the request left, too). Returns the bounds now, or
   * undefined when the answer carries no time and nothing was learned before.
   */
  learn(time: unknown, sent: Stamp, kind: "read" | "write"): StoreTime | undefined;
}

/**
 * The option, keyed by this symbol and exported from no entry point, that puts another
 * {@link LeaseClock} in a lock: the tests' process clock, nothing a user can reach.
 */
export const CLOCK_OPTION: unique symbol = Symbol("lease clock");

/** A store time known at a moment of this process. */
interface Anchor {
  readonly store: number;
  readonly at: Stamp;
}

/**
 * Bounds on a store's time, from two anchors: the store's time was at least `floor.store`
 * when an answer arrived, and at most `ceiling.store` when a commit request left. Since then
 * the store's clock advanced by the elapsed monotonic time, give or take {@link MAX_DRIFT}:
 * the earliest uses the monotonic clock alone (it never steps; a suspended process only makes
 * it lag, which errs early), the latest the larger of the monotonic and the wall clock's
 * advance (the wall clock catches up on resume over a suspension the monotonic one misses;
 * a win is judged after its write, whose own time the latest never falls below). Between
 * answers the width grows by 2 × MAX_DRIFT of the time since; each answer narrows it to its
 * round trip. An answer the bounds deny (its time outside them) means a clock misbehaved:
 * both anchors start again from that answer.
 */
export class StoreClock implements LeaseClock {
  private floor: Anchor | undefined;
  private ceiling: Anchor | undefined;

  constructor(
    private readonly mono: () => number = () => performance.now(),
    private readonly wall: () => number = Date.now,
  ) {}

  stamp(): Stamp {
    return { mono: this.mono(), wall: this.wall() };
  }

  now(): StoreTime | undefined {
    return this.boundsAt(this.stamp());
  }

  learn(time: unknown, sent: Stamp, kind: "read" | "write"): StoreTime | undefined {
    const received = this.stamp();
    const store = storeMillis(time);
    if (store === undefined) return this.boundsAt(received);
    this.observe(store, sent, received, kind);
    const bounds = this.boundsAt(received);
    if (bounds !== undefined || this.floor === undefined) return bounds;
    // Reads only so far (no commit): the read's own time is where what is written starts.
    const earliest = Math.floor(lowest(this.floor, received));
    return { earliest, latest: Math.max(earliest, Math.ceil(store)) };
  }

  private boundsAt(at: Stamp): StoreTime | undefined {
    if (this.floor === undefined || this.ceiling === undefined) return undefined;
    const earliest = Math.floor(lowest(this.floor, at));
    return { earliest, latest: Math.max(earliest, Math.ceil(highest(this.ceiling, at))) };
  }

  private observe(store: number, sent: Stamp, received: Stamp, kind: "read" | "write"): void {
    const denied =
      (this.ceiling !== undefined && store > highest(this.ceiling, received)) ||
      (kind === "write" && this.floor !== undefined && store < lowest(this.floor, sent));
    if (denied) {
      this.floor = undefined;
      this.ceiling = undefined;
    }
    const floor = { store, at: received };
    if (this.floor === undefined || lowest(floor, received) > lowest(this.floor, received)) {
      this.floor = floor;
    }
    // A read may be served at a time before the request left: only a commit bounds from above.
    if (kind === "write") {
      const ceiling = { store, at: sent };
      if (
        this.ceiling === undefined ||
        highest(ceiling, received) < highest(this.ceiling, received)
      ) {
        this.ceiling = ceiling;
      }
    }
  }
}

/** The least the store's time can be at `at`, from an anchor it was at least. */
function lowest(anchor: Anchor, at: Stamp): number {
  return anchor.store + Math.max(0, at.mono - anchor.at.mono) * (1 - MAX_DRIFT);
}

/** The most the store's time can be at `at`, from an anchor it was at most. */
function highest(anchor: Anchor, at: Stamp): number {
  const elapsed = Math.max(0, at.mono - anchor.at.mono, at.wall - anchor.at.wall);
  return anchor.store + elapsed * (1 + MAX_DRIFT);
}
