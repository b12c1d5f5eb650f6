// The model-based test of the transition table (test/support/model-run.ts) on DatastoreLock,
// against the Datastore-mode emulator. DatastoreLock judges in the store's
// time, and the emulator's clock is this machine's: the client's, to the ms.
import { Datastore } from "@google-cloud/datastore";
import { afterAll, describe, it } from "vitest";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { modelRunOptionsFromEnv, modelTimeoutMs, runModel } from "../support/model-run.js";
import { emulatorOrSkip } from "../support/required.js";
import { runScopedNames } from "./google-cases.js";

const emulator = await emulatorOrSkip("datastore");
afterAll(async () => {
  await emulator?.stop();
});
const freshNamespace = runScopedNames();
const options = modelRunOptionsFromEnv();

describe.skipIf(!emulator)("DatastoreLock (emulator) against the transition table", () => {
  const shared = new Datastore({ projectId: PROJECT });

  it(
    "every answer is the table's",
    async () => {
      await runModel(
        {
          name: "DatastoreLock (emulator)",
          make: (ttlMs) =>
            new DatastoreLock({ datastore: shared, namespace: freshNamespace(), ttlMs }),
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
