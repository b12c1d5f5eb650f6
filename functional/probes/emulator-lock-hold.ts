/**
 * How long the Datastore emulator keeps the lock of a transaction nobody ends: a holder
 * looks a key up in a transaction and then dies (SIGKILL), exits (its channel closes), or
 * stays alive and never commits. Meanwhile a writer retries a transaction on the same key
 * and reports when it first commits. The crash storm's extra wait (EMULATOR_LOCK_WAIT_MS in
 * ../main.ts) is sized from what this prints.
 *
 *   node --import tsx functional/probes/emulator-lock-hold.ts      # about 3.5 minutes
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Datastore } from "@google-cloud/datastore";
import { PROJECT, startEmulator } from "../../test/support/gcloud-emulator.js";

process.env.METADATA_SERVER_DETECTION ??= "none";
const [, , role, name, mode] = process.argv;
const client = () => new Datastore({ projectId: PROJECT, namespace: "lock-probe" });

if (role === "holder") {
  const ds = client();
  const tx = ds.transaction();
  await tx.run();
  await tx.get(ds.key(["K", name ?? "key"]));
  process.send?.("locked");
  if (mode === "exit") setTimeout(() => process.exit(0), 10);
  else setInterval(() => {}, 1_000);
} else {
  const emulator = await startEmulator("datastore");
  process.env.DATASTORE_EMULATOR_HOST = emulator.host;
  const ds = client();
  const write = async (key: string): Promise<boolean> => {
    const tx = ds.transaction();
    try {
      await tx.run();
      await tx.get(ds.key(["K", key]));
      tx.save({ key: ds.key(["K", key]), data: { at: Date.now() } });
      await tx.commit();
      return true;
    } catch {
      await tx.rollback().catch(() => {});
      return false;
    }
  };
  await write("warm-up");
  for (const how of ["killed", "exit", "alive"] as const) {
    const key = `key-${how}`;
    let holder: ChildProcess | undefined;
    if (how === "alive") {
      const tx = ds.transaction();
      await tx.run();
      await tx.get(ds.key(["K", key]));
    } else {
      holder = fork(fileURLToPath(import.meta.url), ["holder", key, how], {
        execArgv: ["--import", "tsx"],
      });
      await new Promise((resolve) => holder?.once("message", resolve));
      if (how === "killed") holder.kill("SIGKILL");
      await new Promise((resolve) => holder?.once("exit", resolve));
    }
    const since = Date.now();
    let attempts = 1;
    while (!(await write(key)) && Date.now() - since < 200_000) attempts++;
    console.log(
      `holder ${how}: the key took a write after ${Date.now() - since} ms (${attempts} attempts)`,
    );
  }
  await emulator.stop();
  process.exit(0);
}
