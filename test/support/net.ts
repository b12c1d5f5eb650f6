import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Where freePort looks: below Linux's ephemeral range (32768–60999), which the OS hands to every
 * outgoing connection and to each server that asks for "any port" (the Firestore emulator's
 * WebSocket server does). A port from that range, released and bound again seconds later by a
 * JVM that is still starting, can be taken in between by any of the thousands of connections a
 * parallel test run opens. A Redis Cluster node also binds its port + 10,000: the range is
 * 10,000 wide, so those bus ports (20,000-29,999) fall neither in it nor in the ephemeral range.
 */
const LOW = 10_000;
const HIGH = 20_000;

/** Ports this process handed out already: never twice, though the first holder may be gone. */
const handedOut = new Set<number>();

/**
 * Where each handed-out port's claim lives, one file per port holding the claimer's pid: the
 * suites CI runs side by side (and a suite's worker threads) each pick ports, and a port one
 * picked but had not bound yet looks free to another, whose probe could then be answered by
 * the first one's server. Claims are best effort: a folder this user cannot write falls back
 * to the in-process guard alone.
 */
export const PORT_CLAIMS = join(tmpdir(), "gcp-pubsub-idempotency-test-ports");

/** A claim file or takeover lock this old with no live owner is stale (a writer that died). */
const STALE_MS = 10_000;

/** This process's claims, removed when it exits. */
const mine = new Set<string>();
let cleanupInstalled = false;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

const code = (error: unknown) => (error as NodeJS.ErrnoException).code;
const ageMs = (path: string) => Date.now() - statSync(path).mtimeMs;

/** Create the claim; true when this call made it. */
function create(file: string): boolean {
  try {
    writeFileSync(file, String(process.pid), { flag: "wx" });
  } catch (error) {
    if (code(error) === "EEXIST") return false;
    throw error;
  }
  mine.add(file);
  if (!cleanupInstalled) {
    cleanupInstalled = true;
    process.once("exit", () => {
      for (const claim of mine) rmSync(claim, { force: true });
    });
  }
  return true;
}

/** Whether the claim in file belongs to no live process: its pid is dead, or it stayed empty. */
function abandoned(file: string): boolean {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return false; // gone meanwhile: the caller's next create decides
  }
  const holder = Number(text);
  if (text === "" || !Number.isInteger(holder) || holder <= 0) {
    // A claim being written, or one whose writer died between create and write.
    try {
      return ageMs(file) > STALE_MS;
    } catch {
      return false;
    }
  }
  return !alive(holder);
}

/**
 * Take over an abandoned claim. Two takers must not both win: each removes the old file only
 * under an exclusive takeover lock, after reading it again there.
 */
function takeOver(file: string): boolean {
  const lock = `${file}.takeover`;
  try {
    mkdirSync(lock);
  } catch (error) {
    if (code(error) !== "EEXIST") throw error;
    // A taker that died inside its takeover leaves the lock: clear it once it is old.
    try {
      if (ageMs(lock) > STALE_MS) rmSync(lock, { recursive: true, force: true });
    } catch {
      // removed meanwhile
    }
    return false;
  }
  try {
    if (!abandoned(file)) return create(file);
    rmSync(file, { force: true });
    return create(file);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Claim port for this process in dir: false when a live process holds it (this one too: a
 * port is handed out once). An abandoned claim is taken over.
 */
export function claimPort(port: number, dir = PORT_CLAIMS): boolean {
  const file = join(dir, String(port));
  try {
    mkdirSync(dir, { recursive: true, mode: 0o1777 });
    if (create(file)) return true;
    return abandoned(file) && takeOver(file);
  } catch (error) {
    const why = code(error);
    if (why === "EACCES" || why === "EPERM" || why === "EROFS") return true; // best effort
    throw error;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A free TCP port on 127.0.0.1, outside the ephemeral range; released for the caller to bind. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 100; tries += 1) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (handedOut.has(port) || !(await canListen(port)) || !claimPort(port)) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port on 127.0.0.1 between ${LOW} and ${HIGH} after 100 tries`);
}

/** What a server prints when the port it was given was taken before it could bind it. */
export const PORT_TAKEN = /BindException|Address already in use|EADDRINUSE/;
