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
import {
  expectOneRunThroughSevering,
  QUICK_PINGS,
  severedMidClaim,
  within,
} from "../support/severing.js";

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

describe.skipIf(!emulator)("severed connections: Firestore emulator (gRPC)", () => {
  it("with gRPC keepalive the channel reconnects and the retried claim wins", async () => {
    const [host, port] = emulator!.host.split(":");
    const proxy = await startFaultProxy({ host: host!, port: Number(port) });
    const firestore = throughProxy(proxy, QUICK_PINGS);
    try {
      const backend = new FirestoreLock({ firestore, collection: `${run}-pings` });
      await expectOneRunThroughSevering(proxy, backend);
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
      const backend = new FirestoreLock({ firestore, collection: `${run}-defaults` });
      await lock("warm-up", { backend, logger: silentLogger }, () => {});
      const { pending } = await severedMidClaim(proxy, backend, "order-1", () => {});
      // Well past the 1.9 s the claim took to come back with pings.
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
