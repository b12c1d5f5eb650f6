import { Firestore } from "@google-cloud/firestore";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  decodeDocumentId,
  encodeDocumentId,
  type FirestoreDocumentLike,
  type FirestoreLike,
  FirestoreLock,
} from "../../src/backends/firestore/index.js";
import { MAX_KEY_BYTES } from "../../src/core/constants.js";
import { InProgress } from "../../src/core/errors.js";
import type { Claim, ClaimOutcome } from "../../src/core/types.js";
import { lock } from "../../src/core/verbs.js";
import { describeBackendContract, warmUpBackend } from "../../src/testing/vitest.js";
import { emulatorOrSkip } from "../harness/gcloud-emulator.js";
import { describeHostileKeys } from "./hostile-keys.js";

const fileStarted = Date.now();
const emulator = await emulatorOrSkip("firestore");
const projectId = "idempotency-test";
// Each run its own collections: the emulator may outlive a run.
const runId = `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
let counter = 0;
const freshCollection = () => `${runId}-${counter++}`;
const silent = { info() {}, warn() {}, error() {} };
const clients: Firestore[] = [];
const client = () => {
  const firestore = new Firestore({ projectId });
  clients.push(firestore);
  return firestore;
};

afterAll(async () => {
  await Promise.all(clients.map((c) => c.terminate()));
  await emulator?.stop();
  console.info(`[firestore] test file took ${Date.now() - fileStarted} ms incl. emulator`);
});

function won(outcome: ClaimOutcome): Claim {
  if (outcome.status !== "won") throw new Error(`expected won, got ${JSON.stringify(outcome)}`);
  return outcome.claim;
}

/**
 * The real instance, with every document call counted, and the next `failures` writes
 * (create / update) reaching the emulator and landing, then rejecting as if the response
 * was lost (gRPC 14 UNAVAILABLE); with `delayMs`, every write waits that long first.
 */
function wrapped(
  real: Firestore,
  state: { failures: number; calls: Map<string, number>; delayMs?: number },
): FirestoreLike {
  const count = (method: string) => state.calls.set(method, (state.calls.get(method) ?? 0) + 1);
  const lose = async <T>(write: () => Promise<T>): Promise<T> => {
    if (state.delayMs) await new Promise((resolve) => setTimeout(resolve, state.delayMs));
    const result = await write();
    if (state.failures > 0) {
      state.failures -= 1;
      throw Object.assign(new Error("14 UNAVAILABLE: simulated lost write response"), {
        code: 14,
      });
    }
    return result;
  };
  const realLike = real as unknown as FirestoreLike;
  return {
    collection: (path) => {
      const collection = realLike.collection(path);
      return {
        where: (field, op, value) => collection.where(field, op, value),
        doc: (id): FirestoreDocumentLike => {
          const ref = collection.doc(id);
          return {
            get: () => {
              count("get");
              return ref.get();
            },
            create: (data) => {
              count("create");
              return lose(() => ref.create(data));
            },
            update: (data, precondition) => {
              count("update");
              return lose(() => ref.update(data, precondition));
            },
            delete: (precondition) => ref.delete(precondition),
          };
        },
      };
    },
  };
}

describe.skipIf(!emulator)("FirestoreLock against the Firestore emulator", () => {
  const shared = client();
  // The first calls open the channel and warm the emulator's write path (seconds on a busy
  // machine): done before the contract's short leases, which a claim slower than its lease
  // would rightly answer as held. The leases these tests let lapse on purpose are ten times
  // the slowest call measured after that.
  let shortLeaseMs = 300;
  beforeAll(async () => {
    const backend = new FirestoreLock({ firestore: shared, collection: freshCollection() });
    const { coldMs, slowestMs } = await warmUpBackend(backend);
    shortLeaseMs = Math.max(shortLeaseMs, 10 * slowestMs);
    console.info(
      `[firestore] warm-up ${coldMs} ms, slowest call after it ${slowestMs} ms: ` +
        `short lease ${shortLeaseMs} ms`,
    );
  }, 120_000);

  describeBackendContract({
    name: "FirestoreLock (emulator)",
    create: ({ ttlMs }) =>
      new FirestoreLock({ firestore: shared, collection: freshCollection(), ttlMs }),
    leaseMs: 400,
  });

  describeHostileKeys(
    "FirestoreLock (emulator)",
    async () => new FirestoreLock({ firestore: shared, collection: freshCollection() }),
    30,
  );

  it("document ids are reversible and always legal", () => {
    const long = "ü".repeat(MAX_KEY_BYTES / 2);
    for (const key of ["a/b", ".", "..", "__name__", "%2F", long, "日本語🙂"]) {
      const id = encodeDocumentId(key);
      expect(decodeDocumentId(id)).toBe(key);
      expect(id).not.toContain("/");
      expect(id).not.toMatch(/^__.*__$|^\.\.?$/);
      expect(Buffer.byteLength(id)).toBeLessThanOrEqual(1500);
    }
  });

  it("keys with '/', '.', '..', '__name__' and 1,024-byte unicode are distinct records", async () => {
    const backend = new FirestoreLock({ firestore: shared, collection: freshCollection() });
    const long = "ü".repeat(MAX_KEY_BYTES / 2);
    const keys = ["a/b", "a", ".", "..", "__name__", long, `${long.slice(1)}x`];
    const claims = [];
    for (const key of keys) claims.push(won(await backend.claim(key, 60_000)));
    for (const claim of claims) expect(await backend.complete(claim)).toBe(true);
    for (const key of keys) expect(await backend.claim(key, 60_000)).toEqual({ status: "done" });
  });

  it("creates its own instance lazily from FIRESTORE_EMULATOR_HOST", async () => {
    const backend = new FirestoreLock({ projectId, collection: freshCollection() });
    const claim = won(await backend.claim("lazy", 60_000));
    expect(await backend.complete(claim)).toBe(true);
    expect(await backend.claim("lazy", 60_000)).toEqual({ status: "done" });
    await backend.close();
  });

  it("validates the collection before any I/O", () => {
    expect(() => new FirestoreLock({ collection: "a/b" })).toThrow(/collection/);
    expect(() => new FirestoreLock({ collection: "__x__" })).toThrow(/collection/);
    expect(() => new FirestoreLock({ collection: ".." })).toThrow(/collection/);
  });

  it("two client instances, 32 concurrent claims on one key: exactly one wins", async () => {
    const collection = freshCollection();
    const a = new FirestoreLock({ firestore: client(), collection });
    const b = new FirestoreLock({ firestore: client(), collection });
    const run = async (key: string) => {
      const outcomes = await Promise.all(
        Array.from({ length: 32 }, (_, i) => (i % 2 === 0 ? a : b).claim(key, 60_000)),
      );
      expect(outcomes.filter((o) => o.status === "won")).toHaveLength(1);
      expect(outcomes.filter((o) => o.status === "held")).toHaveLength(31);
      return outcomes;
    };
    await run("contended");
    // The reclaim path races too: a lapsed lease, then 32 at once.
    const first = won(await a.claim("contended-reclaim", shortLeaseMs));
    await new Promise((resolve) => setTimeout(resolve, shortLeaseMs + 100));
    const outcomes = await run("contended-reclaim");
    const winner = outcomes.find((o) => o.status === "won");
    expect(winner?.status === "won" && winner.claim.fencingId).toBe(first.fencingId + 1);
  }, 60_000);

  it("a claim whose write landed but whose response was lost reaffirms its own win", async () => {
    const collection = freshCollection();
    const state = { failures: 0, calls: new Map<string, number>() };
    const backend = new FirestoreLock({ firestore: wrapped(shared, state), collection });
    const observer = new FirestoreLock({ firestore: shared, collection });
    let runs = 0;
    state.failures = 1;
    await lock("lost", { backend, leaseMs: 60_000, logger: silent }, (claim) => {
      expect(claim.fencingId).toBe(1);
      runs++;
    });
    expect(runs).toBe(1);
    expect(state.failures).toBe(0);
    expect(await observer.claim("lost", 60_000)).toEqual({ status: "done" });

    // The reclaim path: a lapsed lease, then a reclaim whose update response is lost.
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
    const collection = freshCollection();
    const slow = wrapped(shared, { failures: 0, calls: new Map(), delayMs: 300 });
    const backend = new FirestoreLock({ firestore: slow, collection });
    const observer = new FirestoreLock({ firestore: shared, collection });
    let runs = 0;
    const late = lock("late", { backend, leaseMs: 100, logger: silent }, () => {
      runs++;
    });
    await expect(late).rejects.toBeInstanceOf(InProgress);
    expect(runs).toBe(0);
    const reclaimed = await observer.claim("late", 60_000);
    expect(reclaimed).toMatchObject({ status: "won", claim: { fencingId: 2 } });
    expect(await backend.claim("in-time", 5_000)).toMatchObject({ status: "won" });
  });

  it("round trips per verb", async () => {
    const state = { failures: 0, calls: new Map<string, number>() };
    const backend = new FirestoreLock({
      firestore: wrapped(shared, state),
      collection: freshCollection(),
    });
    const measure = async (label: string, fn: () => Promise<unknown>) => {
      state.calls.clear();
      await fn();
      const total = [...state.calls.values()].reduce((x, y) => x + y, 0);
      console.info(
        `[firestore] ${label}: ${total} RPCs ${JSON.stringify(Object.fromEntries(state.calls))}`,
      );
      return total;
    };
    let claim: Claim | undefined;
    expect(
      await measure("claim (absent → won)", async () => {
        claim = won(await backend.claim("rt", 60_000));
      }),
    ).toBe(1);
    expect(await measure("claim (held)", () => backend.claim("rt", 60_000))).toBe(2);
    expect(await measure("renew", () => backend.renew(claim!, 60_000))).toBe(2);
    expect(await measure("complete", () => backend.complete(claim!))).toBe(2);
    expect(await measure("claim (done)", () => backend.claim("rt", 60_000))).toBe(2);
    const other = won(await backend.claim("rt2", 60_000));
    expect(await measure("release", () => backend.release(other))).toBe(2);
    expect(await measure("claim (reclaim)", () => backend.claim("rt2", 60_000))).toBe(3);
  });
});
