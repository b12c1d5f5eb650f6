// The exported contract suite on SpannerLock, against the Spanner emulator: one database for
// the file, a fresh records table per backend. The Spanner-specific cases, and those it
// shares with DatastoreLock and FirestoreLock, are in spanner.test.ts.
import type { Transaction } from "@google-cloud/spanner";
import { afterAll, beforeAll, describe } from "vitest";
import { SpannerLock } from "../../src/backends/spanner/index.js";
import type { TransactionalContractTarget } from "../../src/testing/index.js";
import { describeBackendContract } from "../../src/testing/vitest.js";
import { spannerOrSkip } from "../support/spanner-emulator.js";
import { warmUpOnEmulator } from "./google-cases.js";

const store = await spannerOrSkip([
  "CREATE TABLE business_rows (id STRING(MAX) NOT NULL, value STRING(MAX)) PRIMARY KEY (id)",
]);
const database = store?.database;
let tables = 0;
/** A backend on a records table of its own, created first. */
async function fresh(ttlMs?: number): Promise<SpannerLock<Transaction>> {
  const backend = new SpannerLock<Transaction>({
    database: database!,
    table: `records_${tables++}`,
    ...(ttlMs === undefined ? {} : { ttlMs }),
  });
  await backend.ensureSchema();
  return backend;
}
// Business rows beside the records, in the same database: the transaction cases write them.
const rows: TransactionalContractTarget<Transaction> = {
  async insert(tx, id, value) {
    tx.insert("business_rows", { id, value });
  },
  async read(id) {
    const [found] = await database!.run({
      sql: "SELECT value FROM business_rows WHERE id = @id",
      params: { id },
      json: true,
    });
    return found.length === 0 ? undefined : String((found[0] as { value: unknown }).value);
  },
};
afterAll(() => store?.stop());

describe.skipIf(!store)("SpannerLock against the Spanner emulator", () => {
  beforeAll(async () => {
    await warmUpOnEmulator("spanner", await fresh());
  }, 120_000);

  describeBackendContract({
    name: "SpannerLock (emulator)",
    create: ({ ttlMs }) => fresh(ttlMs),
    leaseMs: 400,
    transactional: rows,
  });
});
