// lockInTransaction on FirestoreLock and DatastoreLock beyond the contract, on the emulators:
// the tx type is the driver's own; a reclaim between the record read and the commit fails the
// Firestore commit and the retry re-checks the fence; an attempt whose commit landed but whose
// answer was lost is not committed twice (Firestore, Datastore); a long Firestore body holds no
// lock on the record, so a duplicate still answers at once.
import { Datastore, type Transaction as DatastoreTransaction } from "@google-cloud/datastore";
import { Firestore, type Transaction as FirestoreTransaction } from "@google-cloud/firestore";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import {
  type DatastoreLike,
  DatastoreLock,
  type DatastoreTransactionLike,
} from "../../src/backends/datastore/index.js";
import {
  type FirestoreDocumentLike,
  type FirestoreLike,
  FirestoreLock,
  type FirestoreSnapshotLike,
  type FirestoreTransactionOf,
} from "../../src/backends/firestore/index.js";
import { lockInTransaction, type TransactionOf } from "../../src/index.js";
import { won } from "../support/claims.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { captureLogger, silentLogger } from "../support/logger.js";
import { emulatorOrSkip } from "../support/required.js";
import { runScopedNames, warmUpOnEmulator } from "./google-cases.js";

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
const fresh = runScopedNames();

describe("transaction types", () => {
  it("the body gets the driver's own Transaction when the client is passed in", () => {
    expectTypeOf<FirestoreTransactionOf<Firestore>>().toEqualTypeOf<FirestoreTransaction>();
    const firestoreLock = new FirestoreLock({ firestore: new Firestore({ projectId: PROJECT }) });
    expectTypeOf<TransactionOf<typeof firestoreLock>>().toEqualTypeOf<FirestoreTransaction>();
    const datastoreLock = new DatastoreLock({ datastore: new Datastore({ projectId: PROJECT }) });
    expectTypeOf<TransactionOf<typeof datastoreLock>>().toEqualTypeOf<DatastoreTransaction>();
    // Made on first use instead: the structural types.
    expectTypeOf<TransactionOf<DatastoreLock>>().toEqualTypeOf<DatastoreTransactionLike>();
  });
});

const firestoreEmulator = await emulatorOrSkip("firestore");
const datastoreEmulator = await emulatorOrSkip("datastore");
afterAll(async () => {
  await firestoreEmulator?.stop();
  await datastoreEmulator?.stop();
});

describe.skipIf(!firestoreEmulator)("FirestoreLock: transactions", () => {
  const firestore = new Firestore({ projectId: PROJECT });
  afterAll(() => firestore.terminate());
  const orders = firestore.collection(fresh());
  // A lease to let lapse on purpose, sized from the emulator's speed after a warm-up.
  let shortLeaseMs = 300;
  beforeAll(async () => {
    shortLeaseMs = await warmUpOnEmulator(
      "firestore",
      new FirestoreLock({ firestore, collection: fresh() }),
    );
  }, 120_000);

  /**
   * The instance, except that the record's read after a body (the one whose snapshot has
   * `state`) runs `afterRead` before it answers; and `runTransaction` may be wrapped.
   */
  function watched(hooks: {
    afterRead?: (() => Promise<void>) | undefined;
    runTransaction?: FirestoreLike["runTransaction"];
  }): FirestoreLike {
    const real = firestore as unknown as FirestoreLike;
    return {
      collection: (path) => {
        const collection = real.collection(path);
        return {
          where: (field, op, value) => collection.where(field, op, value),
          doc: (id) => {
            const ref = collection.doc(id);
            // Still a DocumentReference (its prototype), so a transaction accepts it.
            const watching = Object.create(ref) as FirestoreDocumentLike;
            watching.get = async (): Promise<FirestoreSnapshotLike> => {
              const snapshot = await ref.get();
              const after = hooks.afterRead;
              hooks.afterRead = undefined;
              await after?.();
              return snapshot;
            };
            return watching;
          },
        };
      },
      runTransaction:
        hooks.runTransaction ?? ((update, options) => real.runTransaction!(update, options)),
    };
  }

  it("a reclaim between the record read and the commit: nothing lands, the retry re-checks the fence", async () => {
    const collection = fresh();
    const backend = new FirestoreLock({ firestore, collection });
    const key = "order-1";
    const zombieClaimLease = shortLeaseMs;
    const hooks: { afterRead?: (() => Promise<void>) | undefined } = {};
    const zombie = new FirestoreLock({ firestore: watched(hooks), collection });
    const logger = captureLogger();
    let runs = 0;
    const value = await lockInTransaction(
      key,
      { backend: zombie, leaseMs: zombieClaimLease, logger },
      async (structural) => {
        // A wrapped instance types tx structurally; it is the driver's Transaction.
        const tx = structural as unknown as FirestoreTransaction;
        runs++;
        tx.create(orders.doc(`${key}-zombie-${runs}`), { by: "zombie" });
        if (runs === 1) {
          // The lease lapses while the body runs; the reclaim lands right after the record
          // was read, so only the commit's precondition can see it.
          await sleep(zombieClaimLease + 100);
          hooks.afterRead = () =>
            lockInTransaction(key, { backend, logger: silentLogger }, async (reclaimer) => {
              reclaimer.create(orders.doc(`${key}-reclaimer`), { by: "reclaimer" });
            });
        }
        return "zombie";
      },
    );
    expect(value).toBe("zombie");
    expect(runs).toBe(2);
    expect((await orders.doc(`${key}-zombie-1`).get()).exists).toBe(false);
    expect((await orders.doc(`${key}-zombie-2`).get()).exists).toBe(false);
    expect((await orders.doc(`${key}-reclaimer`).get()).exists).toBe(true);
    expect(logger.at("ERROR")[0]?.fields).toMatchObject({ outcome: "fenced_out", alert: true });
    expect(await backend.claim(key, 60_000)).toEqual({ status: "done" });
  });

  it("an attempt whose commit landed but whose answer was lost is not committed again", async () => {
    const collection = fresh();
    const real = firestore as unknown as FirestoreLike;
    let lose = true;
    const backend = new FirestoreLock({
      collection,
      firestore: watched({
        runTransaction: async (update, options) => {
          const result = await real.runTransaction!(update, options);
          if (lose) {
            lose = false;
            // As if the commit landed and then the answer went missing.
            throw Object.assign(new Error("9 FAILED_PRECONDITION: simulated lost answer"), {
              code: 9,
            });
          }
          return result;
        },
      }),
    });
    let runs = 0;
    await lockInTransaction("order-2", { backend, logger: silentLogger }, async (tx) => {
      runs++;
      (tx as unknown as FirestoreTransaction).set(orders.doc("order-2"), { runs });
    });
    expect(runs).toBe(2);
    // The second run saw the record done at its own fence and rolled back.
    expect((await orders.doc("order-2").get()).get("runs")).toBe(1);
  });

  it("a long body holds no lock on the record: a duplicate answers held while it runs", async () => {
    const backend = new FirestoreLock({ firestore, collection: fresh() });
    // The body stays open until the duplicate's claim has answered: if the body's transaction
    // held a lock on the record, that claim could not answer (it would wait on the lock, or
    // fail), and the cap below would end the wait and fail the test.
    let bodyStarted!: () => void;
    const started = new Promise<void>((resolve) => {
      bodyStarted = resolve;
    });
    let letBodyEnd!: () => void;
    const gate = new Promise<void>((resolve) => {
      letBodyEnd = resolve;
    });
    const run = lockInTransaction("order-3", { backend, logger: silentLogger }, async (tx) => {
      tx.create(orders.doc("order-3"), { ok: true });
      bodyStarted();
      await gate;
    });
    await started;
    const claimedAt = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const cap = new Promise<"no answer while the body ran">((resolve) => {
      timer = setTimeout(() => resolve("no answer while the body ran"), 20_000);
    });
    const duplicate = await Promise.race([backend.claim("order-3", 60_000), cap]);
    clearTimeout(timer);
    console.info(`[firestore] claim during a transactional body: ${Date.now() - claimedAt} ms`);
    letBodyEnd();
    expect(duplicate).toMatchObject({ status: "held" });
    await run;
    expect(await backend.claim("order-3", 60_000)).toEqual({ status: "done" });
  });
});

describe.skipIf(!datastoreEmulator)("DatastoreLock: transactions", () => {
  const datastore = new Datastore({ projectId: PROJECT });
  const namespace = fresh();
  const orderKey = (id: string) => datastore.key({ namespace, path: ["Order", id] });
  let shortLeaseMs = 300;
  beforeAll(async () => {
    shortLeaseMs = await warmUpOnEmulator(
      "datastore",
      new DatastoreLock({ datastore, namespace: fresh() }),
    );
  }, 120_000);

  it("an attempt whose commit landed but whose answer was lost is not committed again", async () => {
    const real = datastore as unknown as DatastoreLike;
    let lose = false;
    const losing: DatastoreLike = {
      KEY: real.KEY,
      key: (options) => real.key(options),
      get: (key) => real.get(key),
      insert: (entity) => real.insert(entity),
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
          commit: async () => {
            const result = await tx.commit();
            if (lose) {
              lose = false;
              throw Object.assign(new Error("14 UNAVAILABLE: simulated lost answer"), { code: 14 });
            }
            return result;
          },
        };
      },
    };
    const backend = new DatastoreLock({ datastore: losing, namespace: fresh() });
    let runs = 0;
    await lockInTransaction("order-1", { backend, logger: silentLogger }, async (tx) => {
      runs++;
      // The answer lost is the first attempt's commit (not the lock's first, which learns
      // the store's time).
      if (runs === 1) lose = true;
      tx.save({ key: orderKey("order-1"), data: { runs } });
    });
    expect(runs).toBe(2);
    const [order] = await datastore.get(orderKey("order-1"));
    expect(order.runs).toBe(1);
    expect(await backend.claim("order-1", 60_000)).toEqual({ status: "done" });
  });

  it("a reclaim while the body runs: the record, looked up last, shows the stale fence", async () => {
    const backend = new DatastoreLock({ datastore, namespace: fresh() });
    const logger = captureLogger();
    let attempts = 0;
    const value = await lockInTransaction(
      "order-2",
      { backend, leaseMs: shortLeaseMs, logger },
      async (tx, claim) => {
        tx.insert({ key: orderKey("order-2-zombie"), data: { fence: claim.fencingId } });
        // The first run is overtaken; the store transaction's retry finds the stale fence.
        if (attempts++ === 0) {
          await sleep(shortLeaseMs + 100);
          const reclaimer = won(await backend.claim("order-2", 60_000));
          expect(await backend.complete(reclaimer)).toBe(true);
        }
        return "zombie";
      },
    );
    expect(value).toBe("zombie");
    const [zombieOrder] = await datastore.get(orderKey("order-2-zombie"));
    expect(zombieOrder).toBeUndefined();
    expect(logger.at("ERROR")[0]?.fields).toMatchObject({ outcome: "fenced_out", alert: true });
  });
});
