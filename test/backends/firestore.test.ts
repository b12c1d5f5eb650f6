// FirestoreLock beyond the contract (that is firestore.contract.test.ts), on the Firestore
// emulator: the cases it shares with DatastoreLock (google-cases.ts, hostile keys included),
// and its own: document ids, keys that are illegal ids, option checks.
import { Firestore } from "@google-cloud/firestore";
import { afterAll, describe, expect, it } from "vitest";
import {
  decodeDocumentId,
  encodeDocumentId,
  type FirestoreDocumentLike,
  type FirestoreLike,
  FirestoreLock,
} from "../../src/backends/firestore/index.js";
import { MAX_KEY_BYTES } from "../../src/core/constants.js";
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

const emulator = await emulatorOrSkip("firestore");
const freshCollection = runScopedNames();
const clients: Firestore[] = [];
const client = () => {
  const firestore = new Firestore({ projectId: PROJECT });
  clients.push(firestore);
  return firestore;
};
afterAll(async () => {
  await Promise.all(clients.map((c) => c.terminate()));
  await emulator?.stop();
});
const passThrough: AroundWrite = (write) => write();

/** The instance with each document call counted and each write (create, update) passed through `around`. */
function instrumented(
  real: Firestore,
  { calls = new Map(), around = passThrough }: Instrument,
): FirestoreLike {
  const count = (method: string) => calls.set(method, (calls.get(method) ?? 0) + 1);
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
              return around(() => ref.create(data));
            },
            update: (data, precondition) => {
              count("update");
              return around(() => ref.update(data, precondition));
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
  describeRecordIdCases({
    freshScope: freshCollection,
    lock: (collection, recordIds) =>
      new FirestoreLock({ firestore: shared, collection, recordIds }),
    storedIds: async (collection) => {
      const documents = await shared.collection(collection).listDocuments();
      return documents.map((document) => document.id);
    },
    put: async (collection, id, key, record) => {
      await shared
        .collection(collection)
        .doc(id)
        .set({ key, ...record, expiresAt: new Date(record.expiresAt) });
    },
    id: encodeDocumentId,
  });
  describeGoogleLockCases({
    name: "FirestoreLock (emulator)",
    label: "firestore",
    emulatorVariable: "FIRESTORE_EMULATOR_HOST",
    freshScope: freshCollection,
    backend: (collection, instrument, ttlMs) =>
      new FirestoreLock({
        firestore: instrument ? instrumented(shared, instrument) : shared,
        collection,
        ttlMs,
      }),
    lazyBackend: (collection) => new FirestoreLock({ projectId: PROJECT, collection }),
    separateBackend: (collection) => new FirestoreLock({ firestore: client(), collection }),
    reclaimRacers: 32,
    raceTimeoutMs: 60_000,
    // A holder's renew, complete and release: one update under the update time of the
    // record it wrote last (no read before it); a claim of an existing key: the refused
    // create, then the read (and the update of a reclaim).
    roundTrips: {
      firstClaimWon: 2,
      claimWon: 1,
      claimHeld: 2,
      renew: 1,
      complete: 1,
      claimDone: 2,
      release: 1,
      reclaim: 3,
    },
    maxResultBytes: 1_000_000,
  });

  it("document ids are reversible and always legal, spread or plain", () => {
    const long = "ü".repeat(MAX_KEY_BYTES / 2);
    const keys = ["a/b", ".", "..", "__name__", "%2F", long, "日本語🙂", "k", "0000~"];
    for (const [key, layout] of keys.flatMap((k) => [
      [k, "spread"] as const,
      [k, "plain"] as const,
    ])) {
      const id = encodeDocumentId(key, layout);
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

  it("validates the collection before any I/O", () => {
    expect(() => new FirestoreLock({ collection: "a/b" })).toThrow(/collection/);
    expect(() => new FirestoreLock({ collection: "__x__" })).toThrow(/collection/);
    expect(() => new FirestoreLock({ collection: ".." })).toThrow(/collection/);
  });
});
