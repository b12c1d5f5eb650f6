// The exported contract suite on FirestoreLock, against the Firestore emulator. The
// Firestore-specific cases, and those it shares with DatastoreLock, are in firestore.test.ts.
import { Firestore } from "@google-cloud/firestore";
import { afterAll, beforeAll, describe } from "vitest";
import { FirestoreLock } from "../../src/backends/firestore/index.js";
import { describeBackendContract } from "../../src/testing/vitest.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";
import { runScopedNames, warmUpOnEmulator } from "./google-cases.js";

const emulator = await emulatorOrSkip("firestore");
const freshCollection = runScopedNames();
const shared = new Firestore({ projectId: PROJECT });
afterAll(async () => {
  await shared.terminate();
  await emulator?.stop();
});

describe.skipIf(!emulator)("FirestoreLock against the Firestore emulator", () => {
  beforeAll(async () => {
    await warmUpOnEmulator(
      "firestore",
      new FirestoreLock({ firestore: shared, collection: freshCollection() }),
    );
  }, 120_000);

  describeBackendContract({
    name: "FirestoreLock (emulator)",
    create: ({ ttlMs }) =>
      new FirestoreLock({ firestore: shared, collection: freshCollection(), ttlMs }),
    leaseMs: 400,
  });
});
