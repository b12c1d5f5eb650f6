// The fault proxy itself, against an echo server: each fault does what the storm relies on.
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type FaultProxy, startFaultProxy } from "../support/fault-proxy.js";

let echo: Server;
let echoPort = 0;
let proxy: FaultProxy;
const clients: Socket[] = [];

beforeAll(async () => {
  echo = createServer((socket) => {
    socket.on("error", () => {});
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
  const address = echo.address();
  echoPort = typeof address === "object" && address !== null ? address.port : 0;
});
afterAll(async () => {
  await new Promise<void>((resolve) => echo.close(() => resolve()));
});
afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  await proxy?.close();
});

async function client(): Promise<{ socket: Socket; received: () => string; error: () => unknown }> {
  const socket = createConnection(proxy.port, "127.0.0.1");
  clients.push(socket);
  let text = "";
  let failure: unknown;
  socket.on("data", (chunk) => {
    text += chunk.toString();
  });
  socket.on("error", (error) => {
    failure = error;
  });
  await new Promise((resolve) => socket.once("connect", resolve));
  return { socket, received: () => text, error: () => failure };
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("the fault proxy", () => {
  it("forwards both ways, and delays each chunk by the latency of its direction", async () => {
    proxy = await startFaultProxy({ host: "127.0.0.1", port: echoPort });
    const c = await client();
    c.socket.write("ping");
    await until(() => c.received() === "ping");
    proxy.latency(150, "down");
    const sent = Date.now();
    c.socket.write("slow");
    await until(() => c.received() === "pingslow");
    expect(Date.now() - sent).toBeGreaterThanOrEqual(145);
  });

  it("latency may slow some connections only", async () => {
    proxy = await startFaultProxy({ host: "127.0.0.1", port: echoPort });
    const fast = await client();
    const slow = await client();
    proxy.latency(600, "both", (connection) => connection === 2);
    const sent = Date.now();
    fast.socket.write("f");
    slow.socket.write("s");
    await until(() => fast.received() === "f");
    expect(slow.received()).toBe("");
    await until(() => slow.received() === "s");
    expect(Date.now() - sent).toBeGreaterThanOrEqual(595);
  });

  it("resetMidReply cuts the next reply after some bytes with a reset", async () => {
    proxy = await startFaultProxy({ host: "127.0.0.1", port: echoPort });
    const c = await client();
    const fired = proxy.resetMidReply(3);
    c.socket.write("abcdefgh");
    await fired;
    await until(() => c.error() !== undefined);
    expect(c.received()).toBe("abc");
    expect((c.error() as NodeJS.ErrnoException).code).toBe("ECONNRESET");
    expect(proxy.stats().resets).toBe(1);
  });

  it("blackhole holds everything on old and new connections, silently; heal delivers it", async () => {
    proxy = await startFaultProxy({ host: "127.0.0.1", port: echoPort });
    const old = await client();
    proxy.blackhole();
    old.socket.write("held");
    const fresh = await client();
    fresh.socket.write("new");
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(old.received()).toBe("");
    expect(fresh.received()).toBe("");
    expect(old.error()).toBeUndefined();
    expect(old.socket.readyState).toBe("open");
    proxy.heal();
    await until(() => old.received() === "held" && fresh.received() === "new");
    expect(proxy.stats().heldChunks).toBeGreaterThanOrEqual(1);
  });

  it("a severed heal leaves the old connections silent for good, and new ones work", async () => {
    proxy = await startFaultProxy({ host: "127.0.0.1", port: echoPort });
    const old = await client();
    proxy.blackhole();
    old.socket.write("lost");
    proxy.heal({ severed: true });
    old.socket.write("after");
    const fresh = await client();
    fresh.socket.write("new");
    await until(() => fresh.received() === "new");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(old.received()).toBe("");
    expect(old.error()).toBeUndefined();
    expect(old.socket.readyState).toBe("open");
  });
});
