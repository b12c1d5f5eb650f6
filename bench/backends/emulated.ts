/**
 * What the emulator benches (google.ts, spanner.ts) share: ours beside the other contenders on
 * an emulator started for the run, the versions line naming the emulator and the clients, and
 * the clients and the emulator ended after the run, or at once when the setup fails.
 */
import type { LockBackend } from "gcp-pubsub-idempotency";
import type { Emulator } from "../../test/support/gcloud-emulator.js";
import type { Settings } from "../runner.js";
import { type Contender, oursContender, type StartedBackend, version } from "../suite.js";

/** One backend on its emulator, as its bench set it up (seeded). */
export interface EmulatedBackend {
  /** The lock, run as "ours". */
  backend: LockBackend;
  /** The other contenders, after ours: a peer, the floor. */
  others: readonly Contender[];
  /** The emulator as the versions line names it, e.g. `Firestore emulator (native mode)`. */
  emulatorName: string;
  /** The client packages the versions line names, each with its version. */
  packages: readonly string[];
  floorNote: string;
  /** Run only at this concurrency (the Spanner emulator runs one transaction at a time). */
  onlyConcurrency?: number;
  /** Ends what the setup opened beside the clients (before they are closed). */
  stop?: () => Promise<void>;
}

/**
 * Run `setup` on `emulator`; `closeClients` ends the clients made for the run, after it or
 * when the setup fails, before the emulator is stopped.
 */
export async function onEmulator(
  emulator: Emulator,
  settings: Settings,
  closeClients: () => Promise<void>,
  setup: () => Promise<EmulatedBackend>,
): Promise<StartedBackend> {
  try {
    const started = await setup();
    const contenders = [
      oursContender("ours", started.backend, settings, "floor"),
      ...started.others,
    ];
    const clients = started.packages.map((name) => `${name} ${version(name)}`).join("; ");
    return {
      versions: `${started.emulatorName} at ${emulator.host}, started in ${(emulator.startupMs / 1000).toFixed(1)} s; ${clients}`,
      floorNote: started.floorNote,
      open: async (concurrency) => ({
        contenders:
          started.onlyConcurrency === undefined || concurrency === started.onlyConcurrency
            ? contenders
            : [],
        close: async () => {},
      }),
      stop: async () => {
        await started.stop?.();
        await closeClients();
        await emulator.stop();
      },
    };
  } catch (error) {
    await closeClients();
    await emulator.stop();
    throw error;
  }
}
