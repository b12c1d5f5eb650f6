// A claim caught by a severed partition (test/faults/severed-*.test.ts): the fault proxy holds
// its reply back, partitions, then heals with the caught connections gone silent for good.
import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "vitest";
import { type LockBackend, lock } from "../../src/index.js";
import type { FaultProxy } from "./fault-proxy.js";
import { silentLogger } from "./logger.js";

/** gRPC keepalive pings fast enough for a test (the locks' own clients ping once a minute). */
export const QUICK_PINGS: Readonly<Record<string, number>> = {
  "grpc.keepalive_time_ms": 500,
  "grpc.keepalive_timeout_ms": 500,
};

/** Settled or still pending after `ms`. */
export const within = (call: Promise<unknown>, ms: number) =>
  Promise.race([
    call.then(
      () => "settled",
      () => "settled",
    ),
    sleep(ms).then(() => "pending"),
  ]);

/**
 * Run lock() on `key` with its claim's reply held back, then partition and sever: the claim
 * ran on the server, its reply is gone, the connection is silent from then on.
 */
export async function severedMidClaim(
  proxy: FaultProxy,
  backend: LockBackend,
  key: string,
  body: () => void,
  leaseMs = 60_000,
): Promise<{ pending: Promise<unknown> }> {
  proxy.latency(150, "down");
  const pending = lock(key, { backend, leaseMs, logger: silentLogger }, body);
  pending.catch(() => {}); // asserted by the caller
  await sleep(50);
  proxy.blackhole();
  await sleep(150);
  proxy.heal({ severed: true });
  // In an object: an async function returning the promise itself would wait for it.
  return { pending };
}

/** On a warmed-up client, a claim severed mid-reply still resolves, its body run once. */
export async function expectOneRunThroughSevering(
  proxy: FaultProxy,
  backend: LockBackend,
): Promise<void> {
  await lock("warm-up", { backend, logger: silentLogger }, () => {});
  let bodies = 0;
  const { pending } = await severedMidClaim(proxy, backend, "order-1", () => {
    bodies++;
  });
  await expect(pending).resolves.toBeUndefined();
  expect(bodies).toBe(1);
}
