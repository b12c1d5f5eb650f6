// The CLI on the Spanner emulator, run as the bin (which opens its own database from
// SPANNER_EMULATOR_HOST and the spanner: URL, as in production from ADC).
import { afterAll, describe } from "vitest";
import { SpannerLock } from "../../src/backends/spanner/index.js";
import { renderSchema } from "../../src/backends/spanner/io.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { INSTANCE, spannerOrSkip } from "../support/spanner-emulator.js";
import { describeCli } from "./cli-cases.js";

const TABLE = "cli_records";
const store = await spannerOrSkip([renderSchema(TABLE)]);
const database = store?.database;
afterAll(() => store?.stop());

describe.skipIf(!store)("spanner", () => {
  describeCli({
    name: "spanner (emulator)",
    args: () => [
      "--backend",
      `spanner:projects/${PROJECT}/instances/${INSTANCE}/databases/${store?.databaseId}`,
      "--table",
      TABLE,
    ],
    backend: (ttlMs) =>
      new SpannerLock({ database: database!, table: TABLE, ...(ttlMs ? { ttlMs } : {}) }),
    read: () => {
      const at = `projects/${PROJECT}/instances/${INSTANCE}/databases/${store?.databaseId}`;
      return {
        line: `read spanner ${at}, table ${TABLE}`,
        json: { store: "spanner", at, table: TABLE },
      };
    },
  });
});
