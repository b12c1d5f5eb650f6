// The clock DatastoreLock and FirestoreLock judged leases by before issue 32: this process's
// Date.now(), whatever the store's answers say. The clock-skew test's control puts it in a
// lock through the internal CLOCK_OPTION, to show two holders at once when clocks differ.
import type { LeaseClock, Stamp, StoreTime } from "../../src/backends/google/store-clock.js";

export class ProcessClock implements LeaseClock {
  stamp(): Stamp {
    return { mono: performance.now(), wall: Date.now() };
  }

  now(): StoreTime {
    const time = Date.now();
    return { earliest: time, latest: time };
  }

  learn(): StoreTime {
    return this.now();
  }
}
