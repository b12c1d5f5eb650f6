/** A clock whose time moves only when told: pass `now` to InMemoryLock. */
export interface FakeClock {
  /** The current time, epoch ms. */
  now(): number;
  /** Move time forward by `ms`. */
  advance(ms: number): void;
  /** Jump to an absolute time. */
  set(epochMs: number): void;
}

export function createFakeClock(startMs = Date.UTC(2026, 0, 1)): FakeClock {
  let current = startMs;
  return {
    now: () => current,
    advance: (ms) => {
      if (!(ms >= 0)) throw new RangeError(`a fake clock only moves forward, got ${ms}`);
      current += ms;
    },
    set: (epochMs) => {
      current = epochMs;
    },
  };
}
