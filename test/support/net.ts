import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
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
 * the first one's server.
 */
export const PORT_CLAIMS = join(tmpdir(), "gcp-pubsub-idempotency-test-ports");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Claim port for this process in dir: false when a live process holds it. A claim whose
 * process is gone is taken over; of two takers, the exclusive create lets only one win.
 */
export function claimPort(port: number, dir = PORT_CLAIMS): boolean {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, String(port));
  for (let tries = 0; tries < 2; tries += 1) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    let holder: number;
    try {
      holder = Number(readFileSync(file, "utf8"));
    } catch {
      continue; // removed meanwhile: try the create again
    }
    // An empty file is a claim being written (or a torn one): leave it.
    if (!Number.isInteger(holder) || holder <= 0 || alive(holder)) return false;
    try {
      unlinkSync(file);
    } catch {
      // another taker removed it first; the create decides
    }
  }
  return false;
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
