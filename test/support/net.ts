import { createServer } from "node:net";

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
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port on 127.0.0.1 between ${LOW} and ${HIGH} after 100 tries`);
}

/** What a server prints when the port it was given was taken before it could bind it. */
export const PORT_TAKEN = /BindException|Address already in use|EADDRINUSE/;
