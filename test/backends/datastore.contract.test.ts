import { Datastore, v1 } from "@google-cloud/datastore";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type DatastoreLike,
  DatastoreLock,
  type DatastoreTransactionLike,
} from "../../src/backends/datastore/index.js";
import { InProgress } from "../../src/core/errors.js";
import type { Claim, ClaimOutcome } from "../../src/core/types.js";
import { lock } from "../../src/core/verbs.js";
import { describeBackendContract, warmUpBackend } from "../../src/testing/vitest.js";
import { emulatorOrSkip } from "../harness/gcloud-emulator.js";
import { describeHostileKeys } from "./hostile-keys.js";

const fileStarted = Date.now();
const emulator = await emulatorOrSkip("datastore");
const projectId = "idempotency-test";
// Each run its own namespace: the emulator may outlive a run.
const runNamespace = `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
let nsCounter = 0;
const freshNamespace = () => `${runNamespace}-${nsCounter++}`;
const silent = { info() {}, warn() {}, error() {} };

afterAll(async () => {
  await emulator?.stop();
  console.info(`[datastore] test file took ${Date.now() - fileStarted} ms incl. emulator`);
});

function won(outcome: ClaimOutcome): Claim {
  if (outcome.status !== "won") throw new Error(`expected won, got ${JSON.stringify(outcome)}`);
  return outcome.claim;
}

/**
 * Counts the RPCs sent per verb: each transaction method the backend calls is one RPC
 * (run = BeginTransaction, get = Lookup, commit = Commit, rollback = Rollback).
 */
function countingClient(): { datastore: DatastoreLike; calls: Map<string, number> } {
  const real = new Datastore({ projectId }) as unknown as DatastoreLike;
  const calls = new Map<string, number>();
  const count = (method: string) => calls.set(method, (calls.get(method) ?? 0) + 1);
  const datastore: DatastoreLike = {
    KEY: real.KEY,
    namespace: real.namespace,
    key: (options) => real.key(options),
    get: (key) => {
      count("lookup (no tx)");
      return real.get(key);
    },
    insert: (entity) => {
      count("insert (commit, no tx)");
      return real.insert(entity);
    },
    createQuery: (namespaceOrKind, kind) =>
      kind === undefined
        ? real.createQuery(namespaceOrKind)
        : real.createQuery(namespaceOrKind, kind),
    runQuery: (query) => {
      count("runQuery");
      return real.runQuery(query);
    },
    transaction: () => {
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
          return tx.commit();
        },
      };
    },
  };
  return { datastore, calls };
}

/**
 * The real client, except that the next `failures` commits reach the emulator and land, and
 * then reject as if the response was lost (gRPC 14 UNAVAILABLE).
 */
/** The client with every write (insert, commit) passed through `around`. */
function aroundWrites(
  datastore: Datastore,
  around: <T>(write: () => Promise<T>) => Promise<T>,
): DatastoreLike {
  const real = datastore as unknown as DatastoreLike;
  const lose = around;
  return {
    KEY: real.KEY,
    namespace: real.namespace,
    key: (options) => real.key(options),
    get: (key) => real.get(key),
    insert: (entity) => lose(() => real.insert(entity)),
    createQuery: (namespaceOrKind, kind) =>
      kind === undefined
        ? real.createQuery(namespaceOrKind)
        : real.createQuery(namespaceOrKind, kind),
    runQuery: (query) => real.runQuery(query),
    transaction: (): DatastoreTransactionLike => {
      const tx = real.transaction();
      return {
        run: () => tx.run(),
        get: (key) => tx.get(key),
        save: (entity) => tx.save(entity),
        delete: (key) => tx.delete(key),
        rollback: () => tx.rollback(),
        commit: () => lose(() => tx.commit()),
      };
    },
  };
}

/** Writes land, but the first `state.failures` responses are lost (a code 14 instead). */
function losingCommits(datastore: Datastore, state: { failures: number }): DatastoreLike {
  return aroundWrites(datastore, async (write) => {
    const response = await write();
    if (state.failures > 0) {
      state.failures -= 1;
      throw Object.assign(new Error("14 UNAVAILABLE: simulated lost commit response"), {
        code: 14,
      });
    }
    return response;
  });
}

describe.skipIf(!emulator)("DatastoreLock against the Datastore-mode emulator", () => {
  const shared = new Datastore({ projectId });
  // A lease these tests let lapse on purpose: short, but ten times the slowest call measured
  // once the emulator is warm, so no claim that must win outlasts it on a busy machine (a
  // win whose write outlasted its lease rightly answers held).
  let shortLeaseMs = 300;
  beforeAll(async () => {
    const backend = new DatastoreLock({ datastore: shared, namespace: freshNamespace() });
    const { coldMs, slowestMs } = await warmUpBackend(backend);
    shortLeaseMs = Math.max(shortLeaseMs, 10 * slowestMs);
    console.info(
      `[datastore] warm-up ${coldMs} ms, slowest call after it ${slowestMs} ms: ` +
        `short lease ${shortLeaseMs} ms`,
    );
  }, 120_000);

  describeBackendContract({
    name: "DatastoreLock (emulator)",
    create: ({ ttlMs }) =>
      new DatastoreLock({ datastore: shared, namespace: freshNamespace(), ttlMs }),
    leaseMs: 400,
  });

  describeHostileKeys(
    "DatastoreLock (emulator)",
    async () => new DatastoreLock({ datastore: shared, namespace: freshNamespace() }),
    30,
  );

  it("creates its own client lazily from DATASTORE_EMULATOR_HOST", async () => {
    const lockBackend = new DatastoreLock({ projectId, namespace: freshNamespace() });
    const claim = won(await lockBackend.claim("lazy", 60_000));
    expect(await lockBackend.complete(claim)).toBe(true);
    expect(await lockBackend.claim("lazy", 60_000)).toEqual({ status: "done" });
  });

  it("close() closes a client the lock created, and leaves a given one open", async () => {
    const closing = vi.spyOn(v1.DatastoreClient.prototype, "close");
    try {
      const namespace = freshNamespace();
      const own = new DatastoreLock({ projectId, namespace });
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
    const datastore = new Datastore({ projectId, namespace: freshNamespace() });
    const backend = new DatastoreLock({ datastore, ttlMs: 200 });
    // A long lease, so the claim wins however slow this new client's first write; the done
    // record then expires 200 ms after the complete.
    expect(await backend.complete(won(await backend.claim("purge-me", 60_000)))).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await backend.purgeExpired()).toBe(1);
    expect(won(await backend.claim("purge-me", 60_000)).fencingId).toBe(1);
  });

  it("validates the kind before any I/O", () => {
    expect(() => new DatastoreLock({ kind: "__reserved__" })).toThrow(/kind/);
    expect(() => new DatastoreLock({ kind: "" })).toThrow(/kind/);
    expect(() => new DatastoreLock({ ttlMs: 0 })).toThrow(/ttlMs/);
  });

  it("two client instances, 32 concurrent claims on one key: exactly one wins", async () => {
    const namespace = freshNamespace();
    // The emulator serializes transactions on one entity with ~2 s lock timeouts, so 32 racing
    // reclaims need a longer retry budget here than production contention does.
    const retry = { attempts: 40, maxElapsedMs: 80_000 };
    const a = new DatastoreLock({ datastore: new Datastore({ projectId }), namespace, retry });
    const b = new DatastoreLock({ datastore: new Datastore({ projectId }), namespace, retry });
    const race = async (key: string, n: number) => {
      const outcomes = await Promise.all(
        Array.from({ length: n }, (_, i) => (i % 2 === 0 ? a : b).claim(key, 60_000)),
      );
      expect(outcomes.filter((o) => o.status === "won")).toHaveLength(1);
      expect(outcomes.filter((o) => o.status === "held")).toHaveLength(n - 1);
      return outcomes;
    };
    await race("contended", 32);
    // The reclaim path (a transaction) races too: a lapsed lease, then 8 at once — the
    // emulator queues transactions on one entity behind ~2 s lock timeouts, so 32 would test
    // its patience rather than our claim.
    const first = won(await a.claim("contended-reclaim", shortLeaseMs));
    await new Promise((resolve) => setTimeout(resolve, shortLeaseMs + 100));
    const winner = (await race("contended-reclaim", 8)).find((o) => o.status === "won");
    expect(winner?.status === "won" && winner.claim.fencingId).toBe(first.fencingId + 1);
  }, 120_000);

  it("a claim whose commit landed but whose response was lost reaffirms its own win", async () => {
    const namespace = freshNamespace();
    const state = { failures: 0 };
    const backend = new DatastoreLock({ datastore: losingCommits(shared, state), namespace });
    const observer = new DatastoreLock({ datastore: shared, namespace });
    let runs = 0;
    state.failures = 1;
    await lock("lost", { backend, leaseMs: 60_000, logger: silent }, (claim) => {
      expect(claim.fencingId).toBe(1);
      runs++;
    });
    expect(runs).toBe(1);
    expect(state.failures).toBe(0);
    expect(await observer.claim("lost", 60_000)).toEqual({ status: "done" });

    // The reclaim path: a lapsed lease, then a reclaim whose commit response is lost.
    const first = won(await observer.claim("lost-reclaim", shortLeaseMs));
    await new Promise((resolve) => setTimeout(resolve, shortLeaseMs + 100));
    state.failures = 1;
    let reruns = 0;
    await lock("lost-reclaim", { backend, leaseMs: 60_000, logger: silent }, async (claim) => {
      expect(claim.fencingId).toBe(first.fencingId + 1);
      expect(state.failures).toBe(0);
      expect(await observer.claim("lost-reclaim", 60_000)).toEqual({
        status: "held",
        leaseExpiresAt: claim.leaseExpiresAt,
      });
      reruns++;
      state.failures = 1; // and the complete's response is lost too
    });
    expect(reruns).toBe(1);
    expect(state.failures).toBe(0);
    expect(await observer.claim("lost-reclaim", 60_000)).toEqual({ status: "done" });
  });

  it("a win whose write outlasted its lease is not handed to a body; the next claim reclaims", async () => {
    const namespace = freshNamespace();
    // Every write lands only after 300 ms, as behind the emulator's lock timeouts.
    const slow = aroundWrites(shared, async (write) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return write();
    });
    const backend = new DatastoreLock({ datastore: slow, namespace });
    const observer = new DatastoreLock({ datastore: shared, namespace });
    let runs = 0;
    const late = lock("late", { backend, leaseMs: 100, logger: silent }, () => {
      runs++;
    });
    await expect(late).rejects.toBeInstanceOf(InProgress);
    expect(runs).toBe(0);
    expect(won(await observer.claim("late", 60_000)).fencingId).toBe(2);
    // A lease longer than the write still wins through the same slow client.
    expect(won(await backend.claim("in-time", 5_000)).fencingId).toBe(1);
  });

  it("gives up on a persistent UNAVAILABLE with a BackendError", async () => {
    const real = shared as unknown as DatastoreLike;
    let lookups = 0;
    const outage = async (): Promise<never> => {
      lookups++;
      throw Object.assign(new Error("14 UNAVAILABLE: simulated outage"), { code: 14 });
    };
    const broken: DatastoreLike = {
      ...losingCommits(shared, { failures: 0 }),
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

  it("round trips per verb", async () => {
    const { datastore, calls } = countingClient();
    const backend = new DatastoreLock({ datastore, namespace: freshNamespace() });
    const measure = async (label: string, fn: () => Promise<unknown>) => {
      calls.clear();
      await fn();
      const total = [...calls.values()].reduce((x, y) => x + y, 0);
      console.info(
        `[datastore] ${label}: ${total} RPCs ${JSON.stringify(Object.fromEntries(calls))}`,
      );
      return total;
    };
    let claim: Claim | undefined;
    expect(
      await measure("claim (absent → won)", async () => {
        claim = won(await backend.claim("rt", 60_000));
      }),
    ).toBe(2);
    expect(await measure("claim (held)", () => backend.claim("rt", 60_000))).toBe(1);
    expect(await measure("renew", () => backend.renew(claim!, 60_000))).toBe(3);
    expect(await measure("complete", () => backend.complete(claim!))).toBe(3);
    expect(await measure("claim (done)", () => backend.claim("rt", 60_000))).toBe(1);
    const other = won(await backend.claim("rt2", 60_000));
    expect(await measure("release", () => backend.release(other))).toBe(3);
    expect(await measure("claim (reclaim)", () => backend.claim("rt2", 60_000))).toBe(4);
  });
});
