// The Cloud Spanner emulator for SpannerLock's tests: the official emulator binary started on
// a free loopback port in a process group of its own (killed whole by stop()), or the one
// SPANNER_EMULATOR_HOST names; an instance on it, and a fresh database per caller.
import type { ChildProcess } from "node:child_process";
import { connect } from "node:net";
import { Spanner } from "@google-cloud/spanner";
import { type Emulator, LOOPBACK_ENV, PROJECT } from "./gcloud-emulator.js";
import { startOrSkip } from "./required.js";
import { killGroup, spawnOnFreePort } from "./spawned-server.js";

/** The gcloud SDK's emulator; SPANNER_EMULATOR_BINARY names another. */
const BINARY =
  process.env.SPANNER_EMULATOR_BINARY ??
  "/usr/lib/google-cloud-sdk/bin/cloud_spanner_emulator/emulator_main";

export const INSTANCE = "idempotency-test";

/** Something accepts TCP connections at host:port. */
function listening(host: string): Promise<boolean> {
  const [hostname, port] = host.split(":");
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
    socket.setTimeout(1_000, () => done(false));
  });
}

/**
 * Start the emulator (or use SPANNER_EMULATOR_HOST's), set the variables the client reads,
 * and create the test instance. The emulator answers multiplexed sessions as regular ones,
 * which the client then fails to give back: the client is told to use its session pool.
 */
export async function startSpannerEmulator(timeoutMs = 60_000): Promise<Emulator> {
  process.env.METADATA_SERVER_DETECTION ??= LOOPBACK_ENV.METADATA_SERVER_DETECTION;
  process.env.GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS = "false";
  process.env.GOOGLE_CLOUD_SPANNER_MULTIPLEXED_SESSIONS_FOR_RW = "false";
  let child: ChildProcess | undefined;
  let host = process.env.SPANNER_EMULATOR_HOST;
  const started = Date.now();
  if (host) {
    if (!(await listening(host))) {
      throw new Error(`SPANNER_EMULATOR_HOST=${host} is set but nothing answers there`);
    }
  } else {
    const spawned = await spawnOnFreePort({
      label: "the Spanner emulator",
      command: (at) => ({ file: BINARY, args: [`--host_port=${at}`] }),
      answers: listening,
      env: { ...process.env, ...LOOPBACK_ENV },
      timeoutMs,
    });
    child = spawned.child;
    host = spawned.host;
    process.env.SPANNER_EMULATOR_HOST = host;
  }
  const onExit = () => {
    try {
      if (child?.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  process.once("exit", onExit);
  const spanner = new Spanner({ projectId: PROJECT });
  try {
    const [instances] = await spanner.getInstances();
    if (!instances.some((instance) => instance.id === INSTANCE)) {
      const [, operation] = await spanner.createInstance(INSTANCE, {
        config: "emulator-config",
        nodes: 1,
      });
      await operation.promise();
    }
  } catch (error) {
    // Another test file may have created it at the same moment.
    if ((error as { code?: unknown }).code !== 6) {
      if (child) await killGroup(child);
      throw error;
    }
  } finally {
    spanner.close();
  }
  const owned = child !== undefined;
  return {
    host,
    startupMs: owned ? Date.now() - started : 0,
    owned,
    stop: async () => {
      process.off("exit", onExit);
      if (child === undefined) return;
      if (process.env.SPANNER_EMULATOR_HOST === host) delete process.env.SPANNER_EMULATOR_HOST;
      await killGroup(child);
    },
  };
}

/** The emulator, a client and a fresh database on it, for one test file. */
export interface SpannerTestStore {
  readonly emulator: Emulator;
  readonly spanner: Spanner;
  readonly database: SpannerDatabase;
  /** The database's id, for clients the test makes itself. */
  readonly databaseId: string;
  /** Close the database and the client, then stop the emulator if this started it. */
  stop(): Promise<void>;
}

type SpannerDatabase = ReturnType<ReturnType<Spanner["instance"]>["database"]>;

/**
 * {@link startOrSkip} for the Spanner emulator and a fresh database created with `schema`: a
 * failure after the emulator started stops it before rejecting, so no emulator outlives a
 * test file that could not set up. Logs where it listens and its startup time.
 */
export async function spannerOrSkip(schema: string[] = []): Promise<SpannerTestStore | undefined> {
  const store = await startOrSkip("the Spanner emulator", async () => {
    const emulator = await startSpannerEmulator();
    const spanner = new Spanner({ projectId: PROJECT });
    try {
      const database = await freshDatabase(spanner, schema);
      return {
        emulator,
        spanner,
        database,
        databaseId: database.formattedName_.split("/").pop() ?? "",
        stop: async () => {
          await database.close();
          spanner.close();
          await emulator.stop();
        },
      };
    } catch (error) {
      spanner.close();
      await emulator.stop();
      throw error;
    }
  });
  if (store) {
    console.info(
      `[support] spanner emulator at ${store.emulator.host}` +
        (store.emulator.owned ? `, started in ${store.emulator.startupMs} ms` : " (existing)"),
    );
  }
  return store;
}

let databases = 0;
const RUN = `t${Date.now().toString(36)}${Math.random().toString(36).slice(2, 5)}`;

/** A fresh database on the test instance, created with `schema`; its name is unique to the run. */
export async function freshDatabase(spanner: Spanner, schema: string[]): Promise<SpannerDatabase> {
  const name = `${RUN}-${databases++}`.slice(0, 30);
  const [database, operation] = await spanner.instance(INSTANCE).createDatabase(name, { schema });
  await operation.promise();
  return database;
}
