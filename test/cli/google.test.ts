// The CLI on the Datastore-mode and Firestore emulators, run as the bin (which makes its own
// client from DATASTORE_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST, as in production from ADC).
import { Datastore } from "@google-cloud/datastore";
import { Firestore } from "@google-cloud/firestore";
import { afterAll, describe } from "vitest";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import { FirestoreLock } from "../../src/backends/firestore/index.js";
import { runScopedNames } from "../backends/google-cases.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";
import { describeCli } from "./cli-cases.js";

const datastoreEmulator = await emulatorOrSkip("datastore");
const firestoreEmulator = await emulatorOrSkip("firestore");
afterAll(async () => {
  await datastoreEmulator?.stop();
  await firestoreEmulator?.stop();
});
const freshScope = runScopedNames();

describe.skipIf(!datastoreEmulator)("datastore", () => {
  const datastore = new Datastore({ projectId: PROJECT });
  const namespace = freshScope();
  describeCli({
    name: "datastore (emulator)",
    args: () => ["--backend", `datastore:${namespace}`],
    backend: (ttlMs) => new DatastoreLock({ datastore, namespace, ...(ttlMs ? { ttlMs } : {}) }),
    read: () => ({
      line: `read datastore, kind IdempotencyRecord, namespace ${namespace}`,
      json: { store: "datastore", kind: "IdempotencyRecord", namespace },
    }),
  });
});

describe.skipIf(!firestoreEmulator)("firestore", () => {
  const firestore = new Firestore({ projectId: PROJECT });
  const collection = freshScope();
  afterAll(() => firestore.terminate());
  describeCli({
    name: "firestore (emulator)",
    args: () => ["--backend", `firestore:${collection}`],
    backend: (ttlMs) => new FirestoreLock({ firestore, collection, ...(ttlMs ? { ttlMs } : {}) }),
    read: () => ({
      line: `read firestore, collection ${collection}`,
      json: { store: "firestore", collection },
    }),
  });
});
