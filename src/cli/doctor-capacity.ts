// doctor's capacity rules: what the service's peak rate writes into its store, against the
// store's published ceilings (docs/capacity.md has the table and the sources). Firestore and
// Datastore mode take about one sustained write per second to one document, and 500 writes per
// second to a narrow key range or a collection with an indexed field that rises with time,
// until they split; the records' expiresAt (the TTL field) is such a field, and their ids
// follow the key under recordIds "plain" (spread ones do not). Pure arithmetic, like
// doctor-rules.ts.
import type { RecordIdLayout } from "../backends/google/record-ids.js";

/** The stores doctor knows the ceilings of (`--store`). */
export const CAPACITY_STORES = [
  "datastore",
  "firestore",
  "spanner",
  "redis",
  "postgres",
  "mysql",
  "sqlite",
  "memory",
] as const;
export type CapacityStore = (typeof CAPACITY_STORES)[number];

/** What the service runs on and at, from doctor's options. */
export interface CapacitySizing {
  /** The lock's store (`--store`); unset: the capacity rules are not judged. */
  readonly store: CapacityStore | undefined;
  /** Deliveries per second at peak, across the service (`--rate`). */
  readonly rate: number | undefined;
  /** mutex cycles per second on one key at peak (`--mutex-rate`). */
  readonly mutexRate: number | undefined;
  /** The lock's recordIds (`--record-ids`, default "spread"). */
  readonly recordIds: RecordIdLayout;
  /** The records' rising fields (expiresAt) exempted from indexing (`--expiry-unindexed`). */
  readonly expiryUnindexed: boolean;
}

/** A rule's answer, in doctor-rules.ts's RuleResult shape. */
export interface CapacityRuleResult {
  readonly rule: "key-write-rate" | "write-rate";
  readonly title: string;
  readonly verdict: "pass" | "fail" | "n/a";
  readonly arithmetic: string;
  readonly fix?: string;
}

/** Firestore's soft limit: sustained writes per second to one document (Datastore mode too). */
export const DOCUMENT_WRITES_PER_SECOND = 1;
/** Writes per second a narrow key range, or a collection with a sequential indexed field, takes. */
export const RANGE_WRITES_PER_SECOND = 500;
/** A first delivery writes its record twice (claim, complete); a mutex cycle too (claim, release). */
const WRITES_PER_CYCLE = 2;

const GOOGLE_DOCUMENT_STORES: ReadonlySet<CapacityStore> = new Set(["datastore", "firestore"]);
const per = (n: number): string => `${+n.toFixed(3)}/s`;

export function capacityRules(sizing: CapacitySizing): CapacityRuleResult[] {
  return [keyWriteRule(sizing), writeRateRule(sizing)];
}

/** One key's mutex cycles stay under the store's per-record ceiling. */
function keyWriteRule(sizing: CapacitySizing): CapacityRuleResult {
  const rule = "key-write-rate";
  const title = "one key's writes stay under the store's per-record ceiling (--mutex-rate)";
  const { store, mutexRate } = sizing;
  if (store === undefined || mutexRate === undefined) {
    return {
      rule,
      title,
      verdict: "n/a",
      arithmetic:
        "not checked: give --store and --mutex-rate (mutex cycles per second on one key at peak)",
    };
  }
  const writes = mutexRate * WRITES_PER_CYCLE;
  const arithmetic = `${per(mutexRate)} cycles × ${WRITES_PER_CYCLE} writes (claim, release) = ${per(writes)} on one record`;
  if (!GOOGLE_DOCUMENT_STORES.has(store)) {
    return {
      rule,
      title,
      verdict: "pass",
      arithmetic: `${arithmetic}: ${store} publishes no per-record ceiling; cycles on one key run one after another, each as long as its body`,
    };
  }
  const pass = writes <= DOCUMENT_WRITES_PER_SECOND;
  return {
    rule,
    title,
    verdict: pass ? "pass" : "fail",
    arithmetic: `${arithmetic} ${pass ? "≤" : ">"} ${per(DOCUMENT_WRITES_PER_SECOND)}, ${store}'s sustained writes to one document`,
    ...(pass
      ? {}
      : {
          fix: `a mutex per entity on ${store} carries one cycle every 2 s sustained: put one entity's updates in one message, or take the mutex on Redis, PostgreSQL or Spanner (keep ${store} for lock())`,
        }),
  };
}

/** The service's record writes fit a key range and the expiresAt index. */
function writeRateRule(sizing: CapacitySizing): CapacityRuleResult {
  const rule = "write-rate";
  const title = "the records' writes fit the store's key range and index (--rate)";
  const { store, rate } = sizing;
  if (store === undefined || rate === undefined) {
    return {
      rule,
      title,
      verdict: "n/a",
      arithmetic: "not checked: give --store and --rate (deliveries per second at peak)",
    };
  }
  const writes = rate * WRITES_PER_CYCLE;
  const arithmetic = `${per(rate)} deliveries × ${WRITES_PER_CYCLE} writes (claim, complete) = ${per(writes)} at most`;
  const plain = sizing.recordIds === "plain";
  if (store === "spanner") {
    return {
      rule,
      title,
      verdict: "pass",
      arithmetic: plain
        ? `${arithmetic}: Spanner splits a hot range by load, but under recordIds "plain" rising keys (message ids, orders:1041, orders:1042) put every insert at its end; move to spread ids (recordIds "migrating", then the default)`
        : `${arithmetic}: the record ids are spread by a hash prefix, and Spanner splits a hot range by load`,
    };
  }
  if (!GOOGLE_DOCUMENT_STORES.has(store)) {
    return { rule, title, verdict: "pass", arithmetic: `${arithmetic}: no key-range ceiling` };
  }
  if (!plain && sizing.expiryUnindexed) {
    return {
      rule,
      title,
      verdict: "pass",
      arithmetic: `${arithmetic}, over spread record ids with expiresAt unindexed (--expiry-unindexed): ramp new traffic by 500/50/5 (start at 500/s, add 50 % every 5 minutes)`,
    };
  }
  const pass = writes <= RANGE_WRITES_PER_SECOND;
  const narrow = plain
    ? `what ${store} takes into one key range (recordIds "plain": rising keys write side by side) and into a collection whose indexed expiresAt rises with time`
    : `what ${store} takes into a collection whose indexed expiresAt rises with time (the record ids are spread)`;
  const fixes = [
    ...(plain
      ? ['move to spread record ids (recordIds "migrating" for one ttl, then the default)']
      : []),
    ...(sizing.expiryUnindexed
      ? []
      : [
          store === "datastore"
            ? "write expiresAt unindexed (DatastoreLock's indexExpiresAt: false; expire records with the TTL policy, not purgeExpired), then pass --expiry-unindexed"
            : "exempt expiresAt from indexing (a single-field exemption; expire records with the TTL policy, not purgeExpired), then pass --expiry-unindexed",
        ]),
    "ramp new traffic by 500/50/5",
  ];
  return {
    rule,
    title,
    verdict: pass ? "pass" : "fail",
    arithmetic: `${arithmetic} ${pass ? "≤" : ">"} ${per(RANGE_WRITES_PER_SECOND)}, ${narrow}`,
    ...(pass ? {} : { fix: fixes.join("; ") }),
  };
}
