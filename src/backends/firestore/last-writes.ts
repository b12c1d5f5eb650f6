// The last record this process wrote for a key, with the update time Firestore gave it: a
// holder's next write (complete, release, renew) goes out under that update time as its
// precondition, without reading first, and the precondition proves the record is still the
// one remembered. Bounded: the oldest entries go first; a missing entry only costs the read.
import type { LockRecord } from "../../core/transitions.js";

/** Keys remembered at most: a few times the deliveries one instance holds at once. */
export const LAST_WRITES_LIMIT = 1_024;

export interface LastWrite {
  readonly record: LockRecord;
  /** The document's update time after the write (its WriteResult.writeTime). */
  readonly updateTime: unknown;
}

export class LastWrites {
  private readonly entries = new Map<string, LastWrite>();

  /** Remember `record` as written at `updateTime`; a record no holder writes again is dropped. */
  remember(key: string, record: LockRecord, updateTime: unknown): void {
    this.entries.delete(key);
    if (record.state === "done" || updateTime === undefined || updateTime === null) return;
    this.entries.set(key, { record, updateTime });
    if (this.entries.size > LAST_WRITES_LIMIT) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
  }

  /** The last write of `key`, forgotten: a write under it remembers what it wrote. */
  take(key: string): LastWrite | undefined {
    const last = this.entries.get(key);
    this.entries.delete(key);
    return last;
  }

  get size(): number {
    return this.entries.size;
  }
}
