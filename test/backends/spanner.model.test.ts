// The model-based test of the transition table (test/support/model-run.ts) on SpannerLock,
// against the Spanner emulator. SpannerLock judges by Spanner's clock, and a win whose commit
// came after its own lease answers held.
import { afterAll, describe, it } from "vitest";
import { SpannerLock } from "../../src/backends/spanner/index.js";
import { modelRunOptionsFromEnv, modelTimeoutMs, runModel } from "../support/model-run.js";
import { spannerOrSkip } from "../support/spanner-emulator.js";

const store = await spannerOrSkip();
const database = store?.database;
let tables = 0;
afterAll(() => store?.stop());
const options = modelRunOptionsFromEnv();

describe.skipIf(!store)("SpannerLock (emulator) against the transition table", () => {
  it(
    "every answer is the table's",
    async () => {
      await runModel(
        {
          name: "SpannerLock (emulator)",
          make: async (ttlMs) => {
            const backend = new SpannerLock({ database: database!, table: `m${tables++}`, ttlMs });
            await backend.ensureSchema();
            return backend;
          },
          clock: "server",
          lapsedWinAnswersHeld: true,
          // A lease no commit outlasts on a loaded machine: the model's "lapsed on return"
          // variant takes the won lease's end at one moment of the window, while a store clock
          // may have set it at any (a held answer at t+305 where it allowed t+283 only).
          minLeaseMs: 300,
          // Nothing purges, and the emulator does not run the row deletion policy.
          deletesExpired: false,
        },
        options,
      );
    },
    modelTimeoutMs(options),
  );
});
