/**
 * The worker fleet: real server processes on fixed loopback ports, restarted by the harness
 * whenever one dies (SIGKILL from the chaos loop, or a body that kills itself in the crash
 * window). Two run the functions-framework CLI, two are Express services.
 */
import { type ChildProcess, fork } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { createRequire } from "node:module";
import { connect } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../test/support/net.js";

export type WorkerKind = "functions-cloudevent" | "functions-http" | "express";

/** The fleet the issue asks for: two functions-framework servers, two Express services. */
export const FLEET: readonly WorkerKind[] = [
  "functions-cloudevent",
  "express",
  "functions-http",
  "express",
];

export interface FleetOptions {
  readonly runDir: string;
  readonly supplierUrl: string;
  readonly namespace: string;
  readonly leaseMs: number;
  /** Chance that a crashable (crash-storm) body kills its process after the supplier call. */
  readonly crashChance: number;
  /** The storm's lock: DatastoreLock, or (`none`, the control run) one that excludes nothing. */
  readonly lock: "datastore" | "none";
  /** Environment every worker needs (emulator hosts, project). */
  readonly env: Readonly<Record<string, string>>;
}

interface Slot {
  readonly index: number;
  readonly name: string;
  readonly kind: WorkerKind;
  readonly port: number;
  readonly eventsFile: string;
  child: ChildProcess | undefined;
  up: boolean;
  starts: number;
}

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
// The framework's own CLI (its package "bin"), beside its main module: exports hide the path.
const functionsCli = join(
  dirname(createRequire(import.meta.url).resolve("@google-cloud/functions-framework")),
  "main.js",
);
const execArgv = ["--import", "tsx", "--import", here("../scripts/text-loader.mjs")];

async function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

export class Fleet {
  readonly slots: Slot[] = [];
  /** Kills by the harness, and restarts after any death. */
  kills = 0;
  restarts = 0;
  /** Every worker process that died while the fleet ran: its unfinished work was abandoned. */
  readonly deadPids = new Set<number>();
  private running = true;
  private readonly log: WriteStream;

  private constructor(private readonly options: FleetOptions) {
    this.log = createWriteStream(join(options.runDir, "workers.log"), { flags: "a" });
  }

  static async start(options: FleetOptions): Promise<Fleet> {
    const fleet = new Fleet(options);
    for (const [index, kind] of FLEET.entries()) {
      const name = `w${index}-${kind}`;
      fleet.slots.push({
        index,
        name,
        kind,
        port: await freePort(),
        eventsFile: join(options.runDir, `${name}.jsonl`),
        child: undefined,
        up: false,
        starts: 0,
      });
    }
    await Promise.all(fleet.slots.map((slot) => fleet.spawn(slot)));
    return fleet;
  }

  get ports(): number[] {
    return this.slots.map((s) => s.port);
  }

  isUp(index: number): boolean {
    return this.slots[index]?.up === true;
  }

  private spawn(slot: Slot): Promise<void> {
    slot.starts += 1;
    const env: Record<string, string> = {
      ...process.env,
      ...this.options.env,
      FUNCTIONAL_WORKER: slot.name,
      FUNCTIONAL_EVENTS_FILE: slot.eventsFile,
      FUNCTIONAL_SUPPLIER_URL: this.options.supplierUrl,
      FUNCTIONAL_NAMESPACE: this.options.namespace,
      FUNCTIONAL_LEASE_MS: String(this.options.leaseMs),
      FUNCTIONAL_CRASH_CHANCE: String(this.options.crashChance),
      FUNCTIONAL_LOCK: this.options.lock,
      PORT: String(slot.port),
      NODE_ENV: "production", // functions-framework: no banner on stdout
    };
    const [modulePath, args] =
      slot.kind === "express"
        ? [here("./workers/express.ts"), []]
        : [
            functionsCli,
            [
              "--target=orders",
              `--source=${here("./workers/functions.ts")}`,
              `--port=${slot.port}`,
              `--signature-type=${slot.kind === "functions-http" ? "http" : "cloudevent"}`,
            ],
          ];
    if (slot.kind === "functions-http") env.FUNCTIONAL_SURFACE = "http";
    const child = fork(modulePath, args, {
      execArgv,
      env,
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    slot.child = child;
    const tag = `[${slot.name} pid ${child.pid}] `;
    const copy = (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n")) if (line) this.log.write(`${tag}${line}\n`);
    };
    child.stdout?.on("data", copy);
    child.stderr?.on("data", copy);
    child.once("exit", (code, signal) => {
      slot.up = false;
      if (slot.child === child) slot.child = undefined;
      if (this.running && child.pid !== undefined) this.deadPids.add(child.pid);
      this.log.write(`${tag}exited (${signal ?? code})\n`);
      if (this.running) {
        this.restarts += 1;
        void this.spawn(slot);
      }
    });
    return (async () => {
      const deadline = Date.now() + 60_000;
      while (!(await listening(slot.port))) {
        if (slot.child !== child) return; // died while starting; its restart takes over
        if (Date.now() > deadline) throw new Error(`${slot.name} did not start listening`);
        await new Promise((r) => setTimeout(r, 50));
      }
      if (slot.child === child) slot.up = true;
    })();
  }

  /** SIGKILL one live worker, chosen at random; the exit handler restarts it. */
  killRandom(random: () => number): string | undefined {
    const live = this.slots.filter((s) => s.up && s.child);
    const victim = live[Math.floor(random() * live.length)];
    if (!victim?.child) return undefined;
    victim.up = false;
    victim.child.kill("SIGKILL");
    this.kills += 1;
    return victim.name;
  }

  /** Wait until every slot is listening again. */
  async settle(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.slots.some((s) => !s.up)) {
      if (Date.now() > deadline) throw new Error("the fleet did not come back up");
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private stopping: Promise<void> | undefined;

  /**
   * End every worker: close the IPC channel, SIGKILL what is still there after a moment. Once:
   * a second call waits for the first.
   */
  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    this.running = false;
    await Promise.all(
      this.slots.map(async (slot) => {
        const child = slot.child;
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((r) => child.once("exit", () => r()));
        child.disconnect();
        const timer = setTimeout(() => child.kill("SIGKILL"), 2_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    await new Promise<void>((r) => this.log.end(() => r()));
  }
}
