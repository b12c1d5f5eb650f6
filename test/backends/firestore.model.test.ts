// The model-based test of the transition table (test/support/model-run.ts) on FirestoreLock,
// against the Firestore emulator. FirestoreLock judges in the store's
// time, and the emulator's clock is this machine's: the client's, to the ms.
import { Firestore } from "@google-cloud/firestore";
import { afterAll, describe, it } from "vitest";
import { FirestoreLock } from "../../src/backends/firestore/index.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { modelRunOptionsFromEnv, modelTimeoutMs, runModel } from "../support/model-run.js";
import { emulatorOrSkip } from "../support/required.js";
import { runScopedNames } from "./google-cases.js";

const emulator = await emulatorOrSkip("firestore");
const freshCollection = runScopedNames();
const shared = new Firestore({ projectId: PROJECT });
afterAll(async () => {
  await shared.terminate();
  await emulator?.stop();
});
const options = modelRunOptionsFromEnv();

describe.skipIf(!emulator)("FirestoreLock (emulator) against the transition table", () => {
  it(
    "every answer is the table's",
    async () => {
      await runModel(
        {
          name: "FirestoreLock (emulator)",
          make: (ttlMs) =>
            new FirestoreLock({ firestore: shared, collection: freshCollection(), ttlMs }),
          clock: "client",
          lapsedWinAnswersHeld: true,
          // The store's time as bounds: a recent answer's round trip wide at most.
          clockLagMs: ({ p90Ms }) => 2 * p90Ms + 10,
          // Nothing purges, and no TTL policy is set: an expired record stays.
          deletesExpired: false,
        },
        options,
      );
    },
    modelTimeoutMs(options),
  );
});
