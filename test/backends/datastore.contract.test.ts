// The exported contract suite on DatastoreLock, against the Datastore-mode emulator. The
// Datastore-specific cases, and those it shares with FirestoreLock, are in datastore.test.ts.
import { Datastore } from "@google-cloud/datastore";
import { afterAll, beforeAll, describe } from "vitest";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import { describeBackendContract } from "../../src/testing/vitest.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";
import { runScopedNames, warmUpOnEmulator } from "./google-cases.js";

const emulator = await emulatorOrSkip("datastore");
afterAll(async () => {
  await emulator?.stop();
});
const freshNamespace = runScopedNames();

describe.skipIf(!emulator)("DatastoreLock against the Datastore-mode emulator", () => {
  const shared = new Datastore({ projectId: PROJECT });
  beforeAll(async () => {
    await warmUpOnEmulator(
      "datastore",
      new DatastoreLock({ datastore: shared, namespace: freshNamespace() }),
    );
  }, 120_000);

  describeBackendContract({
    name: "DatastoreLock (emulator)",
    create: ({ ttlMs }) =>
      new DatastoreLock({ datastore: shared, namespace: freshNamespace(), ttlMs }),
    leaseMs: 400,
  });
});
