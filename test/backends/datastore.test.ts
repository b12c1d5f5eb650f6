// DatastoreLock beyond the contract (that is datastore.contract.test.ts), on the Datastore-mode
// emulator: the cases it shares with FirestoreLock (google-cases.ts, hostile keys included),
// and its own: close(), purging in the client's default namespace, option checks, an outage.
import { Datastore, PropertyFilter, v1 } from "@google-cloud/datastore";
import { afterAll, describe, expect, it, vi } from "vitest";
import {
  type DatastoreLike,
  DatastoreLock,
  type DatastoreTransactionLike,
  encodeName,
} from "../../src/backends/datastore/index.js";
import { won } from "../support/claims.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";
import {
  type AroundWrite,
  describeGoogleLockCases,
  type Instrument,
  runScopedNames,
} from "./google-cases.js";
import { describeRecordIdCases } from "./google-record-ids.js";

const emulator = await emulatorOrSkip("datastore");
afterAll(async () => {
  await emulator?.stop();
});
const freshNamespace = runScopedNames();
const passThrough: AroundWrite = (write) => write();

/**
 * The client with each RPC counted (run = BeginTransaction, get = Lookup, commit = Commit,
 * rollback = Rollback; save and delete only buffer) and each write (insert, commit) passed
 * through `around`.
 */
function instrumented(
  datastore: Datastore,
  { calls = new Map(), around = passThrough }: Instrument,
): DatastoreLike {
  const real = datastore as unknown as DatastoreLike;
  const count = (method: string) => calls.set(method, (calls.get(method) ?? 0) + 1);
  return {
    KEY: real.KEY,
    namespace: real.namespace,
    key: (options) => real.key(options),
    get: (key) => {
      count("lookup (no tx)");
      return real.get(key);
    },
    insert: (entity) => {
      count("insert (commit, no tx)");
      return around(() => real.insert(entity));
    },
    createQuery: (namespaceOrKind, kind) =>
      kind === undefined
        ? real.createQuery(namespaceOrKind)
        : real.createQuery(namespaceOrKind, kind),
    runQuery: (query) => {
      count("runQuery");
      return real.runQuery(query);
    },
    transaction: (): DatastoreTransactionLike => {
      const tx = real.transaction();
      return {
        run: () => {
          count("beginTransaction");
          return tx.run();
        },
        get: (key) => {
          count("lookup");
          return tx.get(key);
        },
        save: (entity) => tx.save(entity),
        delete: (key) => tx.delete(key),
        rollback: () => {
          count("rollback");
          return tx.rollback();
        },
        commit: () => {
          count("commit");
          return around(() => tx.commit());
        },
      };
    },
  };
}

describe.skipIf(!emulator)("DatastoreLock against the Datastore-mode emulator", () => {
  const shared = new Datastore({ projectId: PROJECT });
  describeRecordIdCases({
    freshScope: freshNamespace,
    lock: (namespace, recordIds) => new DatastoreLock({ datastore: shared, namespace, recordIds }),
    storedIds: async (namespace) => {
      const query = shared.createQuery(namespace, "IdempotencyRecord").select("__key__");
      const [rows] = await shared.runQuery(query);
      return rows.map((row) => String(row[shared.KEY].name));
    },
    put: async (namespace, id, key, record) => {
      await shared.save({
        key: shared.key({ namespace, path: ["IdempotencyRecord", id] }),
        data: { key, ...record, expiresAt: new Date(record.expiresAt) },
      });
    },
    id: encodeName,
  });
  describeGoogleLockCases({
    name: "DatastoreLock (emulator)",
    label: "datastore",
    emulatorVariable: "DATASTORE_EMULATOR_HOST",
    freshScope: freshNamespace,
    backend: (namespace, instrument, ttlMs) =>
      new DatastoreLock({
        datastore: instrument ? instrumented(shared, instrument) : shared,
        namespace,
        ttlMs,
      }),
    lazyBackend: (namespace) => new DatastoreLock({ projectId: PROJECT, namespace }),
    // The emulator serializes transactions on one entity with ~2 s lock timeouts, so racing
    // claims need a longer retry budget here than production contention does, and the reclaim
    // path (a transaction) races 6 at once: 32 would test its patience rather than our claim.
    // On a loaded CI machine one reclaim race once spent 80 s of lock timeouts, hence the budget.
    separateBackend: (namespace) =>
      new DatastoreLock({
        datastore: new Datastore({ projectId: PROJECT }),
        namespace,
        retry: { attempts: 80, maxElapsedMs: 150_000 },
      }),
    reclaimRacers: 6,
    raceTimeoutMs: 240_000,
    roundTrips: {
      firstClaimWon: 4,
      claimWon: 2,
      claimHeld: 1,
      renew: 3,
      complete: 3,
      claimDone: 1,
      release: 3,
      reclaim: 4,
    },
    maxResultBytes: 1_000_000,
  });

  it("close() closes a client the lock created, and leaves a given one open", async () => {
    const closing = vi.spyOn(v1.DatastoreClient.prototype, "close");
    try {
      const namespace = freshNamespace();
      const own = new DatastoreLock({ projectId: PROJECT, namespace });
      const claim = won(await own.claim("closing", 60_000));
      expect(closing).not.toHaveBeenCalled();
      await own.close();
      // Its gRPC client (made on the first call) is closed; it is not shared with anyone.
      expect(closing).toHaveBeenCalledTimes(1);
      // A later call creates a new client and sees the same record.
      expect(await own.claim("closing", 60_000)).toMatchObject({ status: "held" });
      expect(await own.complete(claim)).toBe(true);
      await own.close();
      expect(closing).toHaveBeenCalledTimes(2);

      closing.mockClear();
      const given = new DatastoreLock({ datastore: shared, namespace });
      expect(await given.claim("closing", 60_000)).toEqual({ status: "done" });
      await given.close();
      expect(closing).not.toHaveBeenCalled();
      expect(await given.claim("closing", 60_000)).toEqual({ status: "done" });
    } finally {
      closing.mockRestore();
    }
  });

  it("purgeExpired honours the client's own default namespace", async () => {
    const datastore = new Datastore({ projectId: PROJECT, namespace: freshNamespace() });
    const backend = new DatastoreLock({ datastore, ttlMs: 200 });
    // A long lease, so the claim wins however slow this new client's first write; the done
    // record then expires 200 ms after the complete.
    const claim = won(await backend.claim("purge-me", 60_000));
    expect(await backend.complete(claim)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await backend.purgeExpired()).toBe(1);
    // A new record, its fence above the purged one's.
    expect(won(await backend.claim("purge-me", 60_000)).fencingId).toBeGreaterThan(claim.fencingId);
  });

  it("validates the kind before any I/O", () => {
    expect(() => new DatastoreLock({ kind: "__reserved__" })).toThrow(/kind/);
    expect(() => new DatastoreLock({ kind: "" })).toThrow(/kind/);
    expect(() => new DatastoreLock({ ttlMs: 0 })).toThrow(/ttlMs/);
  });

  it("indexExpiresAt: false writes expiresAt unindexed; purgeExpired refuses and says why", async () => {
    const namespace = freshNamespace();
    const unindexed = new DatastoreLock({
      datastore: shared,
      namespace,
      ttlMs: 1,
      indexExpiresAt: false,
    });
    const indexed = new DatastoreLock({ datastore: shared, namespace, ttlMs: 1 });
    expect([unindexed.indexExpiresAt, indexed.indexExpiresAt]).toEqual([false, true]);
    await unindexed.complete(won(await unindexed.claim("unindexed", 60_000)));
    await indexed.complete(won(await indexed.claim("indexed", 60_000)));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The store's own query by expiresAt finds only the indexed record, as a purge would.
    const query = shared
      .createQuery(namespace, "IdempotencyRecord")
      .filter(new PropertyFilter("expiresAt", "<=", new Date(Date.now() + 60_000)))
      .select("__key__");
    const [rows] = await shared.runQuery(query);
    expect(rows.map((row) => row[shared.KEY].name)).toEqual([encodeName("indexed")]);
    // Every call still works on the unindexed record.
    expect(await unindexed.inspect("unindexed")).toMatchObject({ key: "unindexed", state: "done" });
    await expect(unindexed.purgeExpired()).rejects.toThrow(
      /purgeExpired\(\) queries expiresAt, which this DatastoreLock writes unindexed \(indexExpiresAt: false\): let the kind's TTL policy/,
    );
    expect(() => new DatastoreLock({ indexExpiresAt: "no" as never })).toThrow(
      /indexExpiresAt must be true or false/,
    );
  });

  it("gives up on a persistent UNAVAILABLE with a BackendError", async () => {
    const real = shared as unknown as DatastoreLike;
    let lookups = 0;
    const outage = async (): Promise<never> => {
      lookups++;
      throw Object.assign(new Error("14 UNAVAILABLE: simulated outage"), { code: 14 });
    };
    const broken: DatastoreLike = {
      ...instrumented(shared, {}),
      get: outage,
      transaction: () => {
        const tx = real.transaction();
        return {
          ...tx,
          run: () => tx.run(),
          save: (entity) => tx.save(entity),
          delete: (key) => tx.delete(key),
          commit: () => tx.commit(),
          rollback: () => tx.rollback(),
          get: outage,
        };
      },
    };
    const backend = new DatastoreLock({
      datastore: broken,
      namespace: freshNamespace(),
      retry: { attempts: 3, baseDelayMs: 5 },
    });
    await expect(backend.claim("outage", 60_000)).rejects.toMatchObject({
      code: "BACKEND_ERROR",
      backend: "datastore",
      verb: "claim",
      key: "outage",
    });
    expect(lookups).toBe(3);
  });
});
