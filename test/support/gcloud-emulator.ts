import { killGroup, spawnOnFreePort } from "./spawned-server.js";

/** A running (or borrowed) emulator: where it listens, and how to stop what we started. */
export interface Emulator {
  /** host:port, as the *_EMULATOR_HOST variables want it. */
  host: string;
  /** How long startup took, in ms (0 when an existing emulator was used). */
  startupMs: number;
  /** True when this harness started the process (and so must stop it). */
  owned: boolean;
  stop(): Promise<void>;
}

export type EmulatorMode = "datastore" | "firestore" | "pubsub";

const ENV_VAR: Record<EmulatorMode, string> = {
  datastore: "DATASTORE_EMULATOR_HOST",
  firestore: "FIRESTORE_EMULATOR_HOST",
  pubsub: "PUBSUB_EMULATOR_HOST",
};

/** The project the clients name; every emulator accepts any. */
export const PROJECT = "idempotency-test";

/**
 * The environment of loopback-only clients: google-auth-library looks for no GCE metadata
 * server (a connect to 169.254.169.254 and a DNS query for metadata.google.internal otherwise),
 * and gcloud neither checks for one (it does on a fresh config) nor for updates, nor reports
 * usage. Set in this process when it starts an emulator, and in the gcloud child.
 */
export const LOOPBACK_ENV: Readonly<Record<string, string>> = {
  METADATA_SERVER_DETECTION: "none",
  CLOUDSDK_CORE_CHECK_GCE_METADATA: "false",
  CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK: "true",
  CLOUDSDK_CORE_DISABLE_USAGE_REPORTING: "true",
};

/** The gcloud arguments that start each emulator on `host`. */
function startArgs(mode: EmulatorMode, host: string): string[] {
  if (mode === "pubsub") {
    return ["beta", "emulators", "pubsub", "start", `--host-port=${host}`, `--project=${PROJECT}`];
  }
  const args = ["beta", "emulators", "firestore", "start", `--host-port=${host}`];
  if (mode === "datastore") args.push("--database-mode=datastore-mode");
  return args;
}

async function answers(host: string): Promise<boolean> {
  try {
    const response = await fetch(`http://${host}/`, { signal: AbortSignal.timeout(1_000) });
    return response.status === 200;
  } catch {
    return false;
  }
}

/**
 * Use the emulator named by DATASTORE_EMULATOR_HOST / FIRESTORE_EMULATOR_HOST /
 * PUBSUB_EMULATOR_HOST, or start one
 * on a free port and set that variable for this process. Rejects when it cannot start.
 */
export async function startEmulator(
  mode: EmulatorMode,
  options: { timeoutMs?: number } = {},
): Promise<Emulator> {
  const envVar = ENV_VAR[mode];
  // Before the first client is made: the clients read it when they first connect.
  process.env.METADATA_SERVER_DETECTION ??= LOOPBACK_ENV.METADATA_SERVER_DETECTION;
  const existing = process.env[envVar];
  if (existing) {
    if (!(await answers(existing))) {
      throw new Error(`${envVar}=${existing} is set but nothing answers there`);
    }
    return { host: existing, startupMs: 0, owned: false, stop: async () => {} };
  }
  const { child, host, startupMs } = await spawnOnFreePort({
    label: `the ${mode} emulator`,
    command: (at) => ({ file: "gcloud", args: startArgs(mode, at) }),
    answers,
    env: { ...process.env, ...LOOPBACK_ENV },
    timeoutMs: options.timeoutMs ?? 60_000,
  });
  // Should the test process die without running stop(), do not leave the Java child behind.
  const onExit = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  process.once("exit", onExit);
  process.env[envVar] = host;
  // The clients also want a project; the emulators accept any.
  process.env.GCLOUD_PROJECT ??= PROJECT;
  return {
    host,
    startupMs,
    owned: true,
    stop: async () => {
      if (process.env[envVar] === host) delete process.env[envVar];
      process.off("exit", onExit);
      await killGroup(child);
    },
  };
}
