// doctor's capacity rules: a peak rate and a per-key mutex rate against the store's ceilings.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CAPACITY_STORES,
  type CapacitySizing,
  capacityRules,
  DOCUMENT_WRITES_PER_SECOND,
  RANGE_WRITES_PER_SECOND,
} from "../../src/cli/doctor-capacity.js";

const none: CapacitySizing = {
  store: undefined,
  rate: undefined,
  mutexRate: undefined,
  recordIds: "spread",
  expiryUnindexed: false,
};
const verdicts = (sizing: Partial<CapacitySizing>) =>
  Object.fromEntries(capacityRules({ ...none, ...sizing }).map((r) => [r.rule, r.verdict]));

describe("doctor: capacity", () => {
  it("is not judged without a store and a rate", () => {
    expect(verdicts({})).toEqual({ "key-write-rate": "n/a", "write-rate": "n/a" });
    expect(verdicts({ store: "firestore" })).toEqual({
      "key-write-rate": "n/a",
      "write-rate": "n/a",
    });
  });

  it("a mutex per entity on Firestore or Datastore above one cycle every 2 s breaks the per-document ceiling", () => {
    for (const store of ["firestore", "datastore"] as const) {
      expect(verdicts({ store, mutexRate: 0.5 })["key-write-rate"]).toBe("pass");
      expect(verdicts({ store, mutexRate: 0.6 })["key-write-rate"]).toBe("fail");
      const [rule] = capacityRules({ ...none, store, mutexRate: 2 });
      expect(rule?.arithmetic).toBe(
        `2/s cycles × 2 writes (claim, release) = 4/s on one record > 1/s, ${store}'s sustained writes to one document`,
      );
      expect(rule?.fix).toMatch(/Redis, PostgreSQL or Spanner/);
    }
    expect(verdicts({ store: "redis", mutexRate: 500 })["key-write-rate"]).toBe("pass");
  });

  it("above 250 deliveries a second, Firestore and Datastore need expiresAt unindexed and spread ids", () => {
    expect(verdicts({ store: "datastore", rate: 250 })["write-rate"]).toBe("pass");
    const [, rule] = capacityRules({ ...none, store: "datastore", rate: 300 });
    expect(rule?.verdict).toBe("fail");
    expect(rule?.arithmetic).toMatch(/= 600\/s at most > 500\/s/);
    expect(rule?.fix).toMatch(/write expiresAt unindexed \(DatastoreLock.s indexExpiresAt: false/);
    expect(rule?.fix).not.toMatch(/recordIds/);
    expect(verdicts({ store: "datastore", rate: 300, expiryUnindexed: true })["write-rate"]).toBe(
      "pass",
    );
    // 0.1's plain ids put rising keys side by side: unindexing expiresAt is not enough.
    const [, plain] = capacityRules({
      ...none,
      store: "firestore",
      rate: 300,
      recordIds: "plain",
      expiryUnindexed: true,
    });
    expect(plain?.verdict).toBe("fail");
    expect(plain?.fix).toMatch(/^move to spread record ids \(recordIds "migrating"/);
    expect(
      verdicts({ store: "datastore", rate: 300, recordIds: "migrating", expiryUnindexed: true })[
        "write-rate"
      ],
    ).toBe("pass");
    expect(
      capacityRules({ ...none, store: "spanner", rate: 1e5, recordIds: "plain" })[1]?.arithmetic,
    ).toMatch(/move to spread ids/);
    expect(verdicts({ store: "postgres", rate: 100_000 })["write-rate"]).toBe("pass");
  });

  it("the verdicts follow the arithmetic for every store and rate (property)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...CAPACITY_STORES),
        fc.double({ min: 0.001, max: 1e6, noNaN: true }),
        fc.double({ min: 0.001, max: 1e3, noNaN: true }),
        (store, rate, mutexRate) => {
          const google = store === "firestore" || store === "datastore";
          const result = verdicts({ store, rate, mutexRate });
          expect(result["key-write-rate"]).toBe(
            google && 2 * mutexRate > DOCUMENT_WRITES_PER_SECOND ? "fail" : "pass",
          );
          expect(result["write-rate"]).toBe(
            google && 2 * rate > RANGE_WRITES_PER_SECOND ? "fail" : "pass",
          );
        },
      ),
    );
  });
});
