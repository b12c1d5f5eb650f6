/**
 * DatastoreLock and FirestoreLock on the official emulators (Firestore in Datastore mode and
 * in native mode), each started for the run in its own process group and ended after; beside
 * @google-automations/datastore-lock (acquire + release) on the same Datastore emulator.
 * Their floors are the very RPCs the backend sends, made with the client alone, so the ratio
 * is what the backend adds on top of the client.
 */
import { Datastore } from "@google-cloud/datastore";
import { Firestore } from "@google-cloud/firestore";
import { DatastoreLock } from "gcp-pubsub-idempotency/datastore";
import { FirestoreLock } from "gcp-pubsub-idempotency/firestore";
import { startEmulator } from "../../test/support/gcloud-emulator.js";
import type { Settings } from "../runner.js";
import {
  type BackendBench,
  type Contender,
  check,
  KEYS,
  LEASE_MS,
  RUN_ID,
  seed,
  TTL_MS,
} from "../suite.js";
import { onEmulator } from "./emulated.js";

const PROJECT = "idempotency-bench";
// No GCE metadata server here: the auth library's probe for one only prints a warning.
process.env.METADATA_SERVER_DETECTION ??= "none";
const KIND = "IdempotencyRecord";
const ALREADY_EXISTS = 6;
const codeOf = (error: unknown) => (error as { code?: unknown }).code;

const record = (key: string, fencingId: number) => {
  const now = Date.now();
  return {
    key,
    state: "claimed",
    fencingId,
    leaseExpiresAt: now + LEASE_MS,
    expiresAt: new Date(now + LEASE_MS + TTL_MS),
    token: "t",
  };
};

// ------------------------------------------------------------------ Datastore mode

/** DatastoreLock's RPCs, raw: lookup + insert to claim, begin/lookup/commit to complete. */
function datastoreFloor(
  name: string,
  datastore: Datastore,
  namespace: string,
  settings: Settings,
): Contender {
  const keyOf = (key: string) => datastore.key({ namespace, path: [KIND, `k${key}`] });
  const lookup = async (key: string) => (await datastore.get(keyOf(key)))[0] as unknown;
  const update = async (key: string) => {
    const tx = datastore.transaction();
    await tx.run();
    const [entity] = await tx.get(keyOf(key));
    tx.save({ key: keyOf(key), data: { ...record(key, 1), ...(entity as object), state: "done" } });
    await tx.commit();
  };
  return {
    name,
    role: "floor",
    ops: {
      first: async (i) => {
        const key = KEYS.first(name, i);
        check((await lookup(key)) === undefined, "fresh key absent");
        await datastore.insert({ key: keyOf(key), data: record(key, 1) });
        await update(key);
      },
      duplicate: (i) => lookup(KEYS.dup(i, settings)),
      contention: () => lookup(KEYS.held),
      // A released key: the lookup finds a lapsed lease, the reclaim and the release are
      // a transaction each.
      mutex: async (_i, w) => {
        const key = KEYS.mutex(name, w);
        await lookup(key);
        await update(key);
        await update(key);
      },
    },
  };
}

type GoogleLockModule = typeof import("@google-automations/datastore-lock");

/** @google-automations/datastore-lock: one lock per worker, acquire + release per cycle. */
function googleDatastoreLock(module: GoogleLockModule): Contender {
  const locks = new Map<number, InstanceType<GoogleLockModule["DatastoreLock"]>>();
  const lockId = `bench${RUN_ID}`;
  return {
    name: "datastore-lock (google-automations)",
    role: "peer",
    floor: "floor",
    ops: {
      mutex: async (_i, w) => {
        let l = locks.get(w);
        if (l === undefined) {
          l = new module.DatastoreLock(lockId, `w${w}`, 60_000, 10_000);
          locks.set(w, l);
        }
        check(await l.acquire(), "datastore-lock acquired");
        check(await l.release(), "datastore-lock released");
      },
    },
  };
}

export const datastoreBench: BackendBench = {
  id: "datastore",
  title: "Datastore (Firestore in Datastore mode, emulator)",
  async start(settings) {
    const emulator = await startEmulator("datastore");
    return onEmulator(
      emulator,
      settings,
      async () => {},
      async () => {
        const datastore = new Datastore({ projectId: PROJECT });
        const namespace = `bench_${RUN_ID}`;
        const backend = new DatastoreLock({ datastore, namespace, kind: KIND, ttlMs: TTL_MS });
        await seed(backend, settings);
        // It reads the project from the environment and builds its own client on first use.
        process.env.GCLOUD_PROJECT = PROJECT;
        const peer = googleDatastoreLock(await import("@google-automations/datastore-lock"));
        // Its logger (gcf-utils' pino, level trace) writes two debug lines per acquire to
        // stdout synchronously; ours logs nothing on success, so quiet it to warnings.
        const { logger } = await import("gcf-utils");
        (logger as unknown as { pino: { level: string } }).pino.level = "warn";
        return {
          backend,
          others: [peer, datastoreFloor("floor", datastore, namespace, settings)],
          emulatorName: "Firestore emulator (Datastore mode)",
          packages: ["@google-cloud/datastore", "@google-automations/datastore-lock"],
          floorNote:
            "DatastoreLock's own RPCs made with the client alone: a first delivery is lookup + insert + (begin, lookup, commit); a duplicate or held key one lookup; a mutex cycle on a released key lookup + 2 × (begin, lookup, commit)",
        };
      },
    );
  },
};

// ------------------------------------------------------------------ native mode

/** FirestoreLock's RPCs, raw: create to claim, get + preconditioned update to complete. */
function firestoreFloor(
  name: string,
  firestore: Firestore,
  collection: string,
  settings: Settings,
): Contender {
  const doc = (key: string) => firestore.collection(collection).doc(`k${key}`);
  const createOrGet = async (key: string) => {
    try {
      await doc(key).create(record(key, 1));
      return true;
    } catch (error) {
      if (codeOf(error) !== ALREADY_EXISTS) throw error;
      await doc(key).get();
      return false;
    }
  };
  const update = async (key: string) => {
    const snapshot = await doc(key).get();
    await doc(key).update({ state: "done" }, { lastUpdateTime: snapshot.updateTime! });
  };
  return {
    name,
    role: "floor",
    ops: {
      first: async (i) => {
        const key = KEYS.first(name, i);
        check(await createOrGet(key), "fresh key created");
        await update(key);
      },
      duplicate: (i) => createOrGet(KEYS.dup(i, settings)),
      contention: () => createOrGet(KEYS.held),
      mutex: async (_i, w) => {
        const key = KEYS.mutex(name, w);
        const snapshot = (await createOrGet(key)) ? undefined : await doc(key).get();
        if (snapshot)
          await doc(key).update({ fencingId: 2 }, { lastUpdateTime: snapshot.updateTime! });
        await update(key);
      },
    },
  };
}

export const firestoreBench: BackendBench = {
  id: "firestore",
  title: "Firestore (native mode, emulator)",
  async start(settings) {
    const emulator = await startEmulator("firestore");
    const firestore = new Firestore({ projectId: PROJECT });
    return onEmulator(
      emulator,
      settings,
      () => firestore.terminate(),
      async () => {
        const collection = `bench_${RUN_ID}`;
        const backend = new FirestoreLock({ firestore, collection, ttlMs: TTL_MS });
        await seed(backend, settings);
        return {
          backend,
          others: [firestoreFloor("floor", firestore, collection, settings)],
          emulatorName: "Firestore emulator (native mode)",
          packages: ["@google-cloud/firestore"],
          floorNote:
            "FirestoreLock's own RPCs made with the client alone: a first delivery is create + get + preconditioned update; a duplicate or held key create (refused) + get; a mutex cycle on a released key create (refused) + get + update, then get + update",
        };
      },
    );
  },
};
