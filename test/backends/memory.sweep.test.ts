import { describe, expect, it } from "vitest";
import { InMemoryLock, mutex } from "../../src/index.js";
import { createFakeClock } from "../../src/testing/index.js";

describe("InMemoryLock's sweep", () => {
  it("deletes a record reclaimed many times once it expires, through claims of other keys", async () => {
    const clock = createFakeClock();
    const backend = new InMemoryLock({ ttlMs: 1_000, now: clock.now });
    for (let i = 0; i < 10; i++) await backend.claim(`old:${i}`, 100);
    // A key cycled by mutex() is reclaimed in place, never re-inserted.
    for (let i = 0; i < 50; i++) await mutex("cycled", { backend, leaseMs: 100 }, () => undefined);
    expect(backend.size).toBe(11);
    clock.advance(10_000);
    // Each claim inspects a couple of records: enough fresh claims walk the whole map.
    for (let i = 0; i < 20; i++) await backend.claim(`new:${i}`, 100);
    expect(backend.size).toBe(20);
    expect(await backend.inspect("cycled")).toBeUndefined();
  });
});
