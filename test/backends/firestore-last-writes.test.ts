// FirestoreIo's memory of its own last writes: bounded, and never kept for a record no holder
// writes again.
import { describe, expect, it } from "vitest";
import { LAST_WRITES_LIMIT, LastWrites } from "../../src/backends/firestore/last-writes.js";
import type { LockRecord } from "../../src/core/transitions.js";

const claimed = (fencingId: number): LockRecord => ({
  state: "claimed",
  fencingId,
  leaseExpiresAt: 1_000,
  expiresAt: 2_000,
  token: "t",
});

describe("LastWrites", () => {
  it("keeps at most LAST_WRITES_LIMIT keys, the oldest going first", () => {
    const writes = new LastWrites();
    for (let i = 0; i < LAST_WRITES_LIMIT + 10; i++) writes.remember(`k${i}`, claimed(i), i);
    expect(writes.size).toBe(LAST_WRITES_LIMIT);
    expect(writes.take("k0")).toBeUndefined();
    expect(writes.take("k9")).toBeUndefined();
    expect(writes.take("k10")).toEqual({ record: claimed(10), updateTime: 10 });
  });

  it("forgets what it hands out, a done record, and a write without an update time", () => {
    const writes = new LastWrites();
    writes.remember("a", claimed(1), "t1");
    expect(writes.take("a")?.updateTime).toBe("t1");
    expect(writes.take("a")).toBeUndefined();
    writes.remember("b", claimed(1), "t1");
    writes.remember("b", { ...claimed(1), state: "done" }, "t2");
    expect(writes.take("b")).toBeUndefined();
    writes.remember("c", claimed(1), undefined);
    expect(writes.size).toBe(0);
  });
});
