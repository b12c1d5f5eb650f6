// The exported contract suite on FirestoreLock, against the Firestore emulator. The
// Firestore-specific cases, and those it shares with DatastoreLock, are in firestore.test.ts.
import { Firestore, type Transaction } from "@google-cloud/firestore";
import { afterAll, beforeAll, describe } from "vitest";
import { FirestoreLock } from "../../src/backends/firestore/index.js";
import type { TransactionalContractTarget } from "../../src/testing/index.js";
import { describeBackendContract } from "../../src/testing/vitest.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";
import { runScopedNames, warmUpOnEmulator } from "./google-cases.js";

const emulator = await emulatorOrSkip("firestore");
const freshCollection = runScopedNames();
const shared = new Firestore({ projectId: PROJECT });
// Business documents beside the records, one collection for the run.
const rowsCollection = shared.collection(freshCollection());
const rows: TransactionalContractTarget<Transaction> = {
  async insert(tx, id, value) {
    tx.create(rowsCollection.doc(id), { value });
  },
  async read(id) {
    const snapshot = await rowsCollection.doc(id).get();
    return snapshot.exists ? String(snapshot.get("value")) : undefined;
  },
};
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
    transactional: rows,
  });
});
