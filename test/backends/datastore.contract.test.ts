// The exported contract suite on DatastoreLock, against the Datastore-mode emulator. The
// Datastore-specific cases, and those it shares with FirestoreLock, are in datastore.test.ts.
import { Datastore, type Transaction } from "@google-cloud/datastore";
import { afterAll, beforeAll, describe } from "vitest";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import type { TransactionalContractTarget } from "../../src/testing/index.js";
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
  // Business entities beside the records: one namespace for the run, kind ContractRow.
  const rowsNamespace = freshNamespace();
  const rowKey = (id: string) =>
    shared.key({ namespace: rowsNamespace, path: ["ContractRow", id] });
  const rows: TransactionalContractTarget<Transaction> = {
    async insert(tx, id, value) {
      tx.insert({ key: rowKey(id), data: { value } });
    },
    async read(id) {
      const [entity] = await shared.get(rowKey(id));
      return entity === undefined ? undefined : String(entity.value);
    },
  };
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
    transactional: rows,
  });
});
