// A server the tests start themselves (an emulator): spawned in a process group of its own on a
// free loopback port, waited for until it answers, started again on another port when the one
// it was given was taken before it could bind it.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort, PORT_TAKEN } from "./net.js";

/** End the whole process group: the gcloud wrapper leaves its Java child behind otherwise. */
export async function killGroup(child: ChildProcess): Promise<void> {
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    process.kill(-pid, "SIGTERM");
  } catch {
    return;
  }
  if ((await Promise.race([exited, sleep(5_000, "timeout" as const)])) === "timeout") {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  // The wrapper may exit before its Java child; make sure the group is gone.
  await sleep(200);
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

export interface ServerCommand {
  /** What the error names: "the datastore emulator". */
  label: string;
  /** The program and its arguments that serve on host ("127.0.0.1:port"). */
  command(host: string): { file: string; args: string[] };
  /** Whether the server answers at host yet. */
  answers(host: string): Promise<boolean>;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** Where each attempt's port comes from; freePort unless a test hands out a taken one. */
  port?: () => Promise<number>;
}

export interface SpawnedServer {
  child: ChildProcess;
  host: string;
  startupMs: number;
}

class PortTaken extends Error {}

/** Spawn once on host; resolve when it answers, reject when it exits, fails or times out. */
async function spawnOn(server: ServerCommand, host: string): Promise<SpawnedServer> {
  const { file, args } = server.command(host);
  const started = Date.now();
  let output = "";
  let spawnError: Error | undefined;
  const child = spawn(file, args, {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: server.env,
  });
  child.on("error", (error) => {
    spawnError = error;
  });
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  while (!(await server.answers(host))) {
    const exited = child.exitCode !== null;
    if (spawnError || exited || Date.now() > started + server.timeoutMs) {
      // The exit can come before the last of its output: wait for the pipes to close.
      if (exited) await Promise.race([once(child, "close"), sleep(1_000)]);
      await killGroup(child);
      if (exited && PORT_TAKEN.test(output)) {
        throw new PortTaken(`${server.label} found ${host} taken: ${output.trim().slice(-300)}`);
      }
      const why = spawnError?.message ?? (exited ? "exited" : "timed out");
      throw new Error(`${server.label} did not start (${why}): ${output.trim().slice(-600)}`);
    }
    await sleep(100);
  }
  // Past startup nobody reads its output; keep the pipes flowing so it never blocks on them.
  child.stdout?.removeAllListeners("data");
  child.stderr?.removeAllListeners("data");
  child.stdout?.resume();
  child.stderr?.resume();
  return { child, host, startupMs: Date.now() - started };
}

/**
 * Start the server on a free port. A port found free can still be taken before a JVM that is
 * starting binds it; the server then exits saying so, and it is started once more on another
 * port, up to three ports in all.
 */
export async function spawnOnFreePort(server: ServerCommand): Promise<SpawnedServer> {
  const started = Date.now();
  for (let attempt = 1; ; attempt += 1) {
    try {
      const spawned = await spawnOn(server, `127.0.0.1:${await (server.port ?? freePort)()}`);
      // The start a caller waited for includes the attempts on taken ports.
      return { ...spawned, startupMs: Date.now() - started };
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt >= 3) throw error;
    }
  }
}
