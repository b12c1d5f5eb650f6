// The emulators' spawner: a port found free can be bound by another process before a starting
// JVM binds it (CI saw the Datastore emulator exit with BindException). The server is then
// started again on another port; any other failure still rejects at once, naming the server.
import { once } from "node:events";
import { connect, createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/net.js";
import { killGroup, type ServerCommand, spawnOnFreePort } from "../support/spawned-server.js";

// A stand-in server: listens on the host it is given and greets each connection, and exits
// printing the bind error as the emulators do when the port is taken.
const LISTEN = `
const [h, p] = process.argv[1].split(":");
require("node:net").createServer((s) => s.end("stand-in"))
  .on("error", (e) => { console.error("bind failed:", e.message); process.exit(1); })
  .listen(Number(p), h);`;

/** Whether the stand-in (not just anything) serves at host. */
function greets(host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(Number(host.split(":")[1]), "127.0.0.1");
    let heard = "";
    socket.on("data", (chunk) => {
      heard += chunk.toString();
    });
    socket.on("end", () => resolve(heard === "stand-in"));
    socket.on("error", () => resolve(false));
    socket.setTimeout(1_000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

function standIn(ports: number[]): ServerCommand & { tried: number[] } {
  const tried: number[] = [];
  return {
    tried,
    label: "the stand-in server",
    command: (host) => ({ file: process.execPath, args: ["-e", LISTEN, host] }),
    answers: greets,
    env: process.env,
    timeoutMs: 10_000,
    port: async () => {
      const port = ports[tried.length] ?? (await freePort());
      tried.push(port);
      return port;
    },
  };
}

describe("spawnOnFreePort", () => {
  let taken: Server;
  let takenPort: number;
  beforeAll(async () => {
    taken = createServer((socket) => socket.end());
    taken.listen(0, "127.0.0.1");
    await once(taken, "listening");
    takenPort = (taken.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((done) => taken.close(() => done())));

  it("starts the server again on another port when its first port was taken", async () => {
    const server = standIn([takenPort]);
    const started = await spawnOnFreePort(server);
    try {
      expect(server.tried).toHaveLength(2);
      expect(started.host).toBe(`127.0.0.1:${server.tried[1]}`);
      expect(await server.answers(started.host)).toBe(true);
    } finally {
      await killGroup(started.child);
    }
  });

  it("gives up after three taken ports, naming the server and the port", async () => {
    const server = standIn([takenPort, takenPort, takenPort]);
    await expect(spawnOnFreePort(server)).rejects.toThrow(
      `the stand-in server found 127.0.0.1:${takenPort} taken`,
    );
    expect(server.tried).toHaveLength(3);
  });

  it("a server that fails for another reason is not started again", async () => {
    const server = {
      ...standIn([]),
      command: () => ({ file: process.execPath, args: ["-e", "process.exit(3)"] }),
    };
    await expect(spawnOnFreePort(server)).rejects.toThrow(
      "the stand-in server did not start (exited)",
    );
    expect(server.tried).toHaveLength(1);
  });
});
