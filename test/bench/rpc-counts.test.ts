// Each path's gRPC calls on the Datastore, Firestore and Spanner emulators, counted on the
// wire (bench/rpc-counts.ts), held to the budget the benchmark reports: a new round trip on
// any path fails here, and one saved must be written into the budget.
import { describe, expect, it } from "vitest";
import {
  BUDGET,
  countStore,
  PATHS,
  rpcCountsMarkdown,
  STORES,
  type StoreCounts,
  type StoreName,
} from "../../bench/rpc-counts.js";

const counted: Partial<Record<StoreName, StoreCounts>> = {};

describe("round trips per path, counted on the emulators", () => {
  for (const store of STORES) {
    it(`${store}: every path makes exactly its budgeted calls`, async () => {
      const counts = await countStore(store);
      counted[store] = counts;
      const calls = Object.fromEntries(PATHS.map((path) => [path, counts[path].total]));
      const budget = Object.fromEntries(PATHS.map((path) => [path, BUDGET[store][path].calls]));
      expect(calls).toEqual(budget);
      for (const path of PATHS) {
        expect(
          counts[path].total,
          `${store} ${path}: below the fewest the API allows?`,
        ).toBeGreaterThanOrEqual(BUDGET[store][path].fewest);
      }
      if (STORES.every((s) => counted[s])) {
        console.info(rpcCountsMarkdown(counted as Record<StoreName, StoreCounts>));
      }
    }, 180_000);
  }
});
