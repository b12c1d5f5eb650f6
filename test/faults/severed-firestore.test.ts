// A severed partition on Firestore's gRPC channel: what the Datastore case of
// severed-connections.test.ts shows, for @google-cloud/firestore and the client FirestoreLock
// makes. docs/faults.md, "Connections that never come back".
import { Firestore } from "@google-cloud/firestore";
import { afterAll, describe, expect, it, vi } from "vitest";
import { FirestoreLock } from "../../src/backends/firestore/index.js";
import { KEEPALIVE_SETTINGS } from "../../src/backends/google/grpc.js";
import { lock } from "../../src/index.js";
import { type FaultProxy, startFaultProxy } from "../support/fault-proxy.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { silentLogger } from "../support/logger.js";
import { emulatorOrSkip } from "../support/required.js";

/** The settings of every Firestore client made in this file, the lock's own included. */
const made = vi.hoisted((): Record<string, unknown>[] => []);
vi.mock("@google-cloud/firestore", async (importOriginal) => {
  const real = await importOriginal<typeof import("@google-cloud/firestore")>();
  class Firestore extends real.Firestore {
    constructor(settings?: ConstructorParameters<typeof real.Firestore>[0]) {
      made.push({ ...settings });
      super(settings);
    }
  }
  return { ...real, Firestore };
});

/** Keepalive pings fast enough for a test (the lock's own client pings once a minute). */
const quickPings: Record<string, number> = {
  "grpc.keepalive_time_ms": 500,
  "grpc.keepalive_timeout_ms": 500,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const run = `severed-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

const emulator = await emulatorOrSkip("firestore");
afterAll(async () => {
  await emulator?.stop();
});

/** A Firestore client that reaches the emulator through the proxy. */
function throughProxy(proxy: FaultProxy, settings: Record<string, unknown>): Firestore {
  // The driver takes the emulator's address from the environment when it is set.
  const saved = process.env.FIRESTORE_EMULATOR_HOST;
  process.env.FIRESTORE_EMULATOR_HOST = proxy.host;
  try {
    return new Firestore({ projectId: PROJECT, ...settings });
  } finally {
    process.env.FIRESTORE_EMULATOR_HOST = saved;
  }
}

/**
 * lock() on a warmed-up client with the claim's reply held back, then a partition that costs
 * the connection: the claim ran on the server, its reply is gone, the connection is silent.
 */
async function severedMidClaim(proxy: FaultProxy, firestore: Firestore, collection: string) {
  const backend = new FirestoreLock({ firestore, collection });
  await lock("warm-up", { backend, logger: silentLogger }, () => {});
  let bodies = 0;
  proxy.latency(150, "down");
  const pending = lock("order-1", { backend, leaseMs: 60_000, logger: silentLogger }, () => {
    bodies++;
  });
  pending.catch(() => {}); // asserted by the caller
  await sleep(50);
  proxy.blackhole();
  await sleep(150);
  proxy.heal({ severed: true });
  return { pending, bodies: () => bodies };
}

/** Settled or still pending after `ms`. */
const within = (call: Promise<unknown>, ms: number) =>
  Promise.race([
    call.then(
      () => "settled",
      () => "settled",
    ),
    sleep(ms).then(() => "pending"),
  ]);

describe.skipIf(!emulator)("severed connections: Firestore emulator (gRPC)", () => {
  it("with gRPC keepalive the channel reconnects and the retried claim wins", async () => {
    const [host, port] = emulator!.host.split(":");
    const proxy = await startFaultProxy({ host: host!, port: Number(port) });
    const firestore = throughProxy(proxy, quickPings);
    try {
      const { pending, bodies } = await severedMidClaim(proxy, firestore, `${run}-pings`);
      await expect(pending).resolves.toBeUndefined();
      expect(bodies()).toBe(1);
    } finally {
      await firestore.terminate();
      await proxy.close();
    }
  }, 60_000);

  it("control: on the driver's defaults the call waits on the dead connection", async () => {
    const [host, port] = emulator!.host.split(":");
    const proxy = await startFaultProxy({ host: host!, port: Number(port) });
    const firestore = throughProxy(proxy, {});
    try {
      const { pending } = await severedMidClaim(proxy, firestore, `${run}-defaults`);
      // Three times as long as the claim took to come back with pings.
      expect(await within(pending, 5_000)).toBe("pending");
    } finally {
      void firestore.terminate().catch(() => {}); // its dead channel never answers
      await proxy.close();
    }
  }, 60_000);
});

describe.skipIf(!emulator)("severed connections: the client FirestoreLock makes", () => {
  it("has gRPC keepalive set, so a silently dead connection is noticed and replaced", async () => {
    const backend = new FirestoreLock({ projectId: PROJECT, collection: `${run}-made` });
    try {
      await lock("order-1", { backend, logger: silentLogger }, () => {});
      expect(made.at(-1)).toMatchObject(KEEPALIVE_SETTINGS);
    } finally {
      await backend.close();
    }
  });
});
