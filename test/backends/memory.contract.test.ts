import { InMemoryLock } from "../../src/index.js";
import { createFakeClock, describeBackendContract } from "../../src/testing/vitest.js";

const clock = createFakeClock();

describeBackendContract({
  name: "InMemoryLock (fake clock)",
  create: ({ ttlMs }) => new InMemoryLock({ ttlMs, now: clock.now }),
  advance: (ms) => clock.advance(ms),
});

describeBackendContract({
  name: "InMemoryLock (real clock)",
  create: ({ ttlMs }) => new InMemoryLock({ ttlMs }),
  leaseMs: 40,
});
