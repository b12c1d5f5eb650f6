// The model-based test of the transition table (test/support/model-run.ts) on SqlLock:
// PostgreSQL, MariaDB (the mysql dialect) and SQLite, judged by the database's clock.
import { it } from "vitest";
import { modelRunOptionsFromEnv, modelTimeoutMs, runModel } from "../support/model-run.js";
import { openSqlStores } from "./sql-stores.js";

const { targets } = await openSqlStores();
const options = modelRunOptionsFromEnv();

for (const target of targets) {
  it(
    `SqlLock ${target.dialect} against the transition table`,
    async () => {
      await runModel(
        {
          name: `SqlLock ${target.dialect}`,
          make: async (ttlMs) => (await target.make(ttlMs))[0]!,
          clock: "server",
          // Nothing calls purgeExpired(): an expired record stays.
          deletesExpired: false,
        },
        options,
      );
    },
    modelTimeoutMs(options),
  );
}
