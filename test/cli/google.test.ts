// The CLI on the Datastore-mode and Firestore emulators, run as the bin (which makes its own
// client from DATASTORE_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST, as in production from ADC).
import { Datastore } from "@google-cloud/datastore";
import { Firestore } from "@google-cloud/firestore";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import { FirestoreLock } from "../../src/backends/firestore/index.js";
import { runScopedNames } from "../backends/google-cases.js";
import { won } from "../support/claims.js";
import { type BuiltCli, buildCli } from "../support/cli.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";
import { describeCli } from "./cli-cases.js";

const datastoreEmulator = await emulatorOrSkip("datastore");
const firestoreEmulator = await emulatorOrSkip("firestore");
afterAll(async () => {
  await datastoreEmulator?.stop();
  await firestoreEmulator?.stop();
});
const freshScope = runScopedNames();

describe.skipIf(!datastoreEmulator)("datastore", () => {
  const datastore = new Datastore({ projectId: PROJECT });
  const namespace = freshScope();
  describeCli({
    name: "datastore (emulator)",
    args: () => ["--backend", `datastore:${namespace}`],
    backend: (ttlMs) => new DatastoreLock({ datastore, namespace, ...(ttlMs ? { ttlMs } : {}) }),
    read: () => ({
      line: `read datastore, kind IdempotencyRecord, namespace ${namespace}`,
      json: { store: "datastore", kind: "IdempotencyRecord", namespace },
    }),
  });
});

describe.skipIf(!datastoreEmulator)("datastore: --record-ids, the service's recordIds", () => {
  const datastore = new Datastore({ projectId: PROJECT });
  const namespace = freshScope();
  let cli: BuiltCli;
  beforeAll(async () => {
    cli = await buildCli();
  });
  afterAll(() => cli?.remove());
  const status = async (...args: string[]) => {
    const run = await cli.run([
      "inspect",
      "--json",
      "--backend",
      `datastore:${namespace}`,
      ...args,
    ]);
    expect(run.stderr).toBe("");
    return (JSON.parse(run.stdout) as { records: { status: string }[] }).records[0]?.status;
  };

  it("reads the ids the service writes: spread by default, plain or migrating when told", async () => {
    const plain = new DatastoreLock({ datastore, namespace, recordIds: "plain" });
    const spread = new DatastoreLock({ datastore, namespace });
    await plain.complete(won(await plain.claim("written-plain", 60_000)));
    await spread.complete(won(await spread.claim("written-spread", 60_000)));
    expect(await status("written-spread")).toBe("done");
    expect(await status("written-plain")).toBe("absent");
    expect(await status("--record-ids", "plain", "written-plain")).toBe("done");
    expect(await status("--record-ids", "plain", "written-spread")).toBe("absent");
    expect(await status("--record-ids", "migrating", "written-plain")).toBe("done");
    expect(await status("--record-ids", "migrating", "written-spread")).toBe("done");
    const bad = await cli.run([
      "inspect",
      "--backend",
      `datastore:${namespace}`,
      "--record-ids",
      "hashed",
      "k",
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--record-ids must be spread, plain, migrating .*"hashed"/);
  });
});

describe.skipIf(!firestoreEmulator)("firestore", () => {
  const firestore = new Firestore({ projectId: PROJECT });
  const collection = freshScope();
  afterAll(() => firestore.terminate());
  describeCli({
    name: "firestore (emulator)",
    args: () => ["--backend", `firestore:${collection}`],
    backend: (ttlMs) => new FirestoreLock({ firestore, collection, ...(ttlMs ? { ttlMs } : {}) }),
    read: () => ({
      line: `read firestore, collection ${collection}`,
      json: { store: "firestore", collection },
    }),
  });
});
