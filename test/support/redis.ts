import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { GlideClient, GlideClusterClient, Logger } from "@valkey/valkey-glide";
import { Cluster, Redis } from "ioredis";
import { createClient, createCluster } from "redis";
import type { RedisScriptClient } from "../../src/backends/redis/index.js";
import { freePort } from "./net.js";

const run = promisify(execFile);

export interface RedisServer {
  host: string;
  port: number;
  url: string;
  /** How it was found, for the skip / log line. */
  origin: string;
  stop(): Promise<void>;
}

/** The two clients RedisLock is tested with, on one server; connect() before use. */
export function redisClientPair(url: string) {
  const io = new Redis(url, { lazyConnect: true });
  const nr = createClient({ url });
  return {
    io,
    nr,
    /** Each client under the name the test titles give it. */
    named: [
      ["ioredis", io],
      ["node-redis", nr],
    ] as const,
    async connect(): Promise<void> {
      await io.connect();
      await nr.connect();
    },
    async close(): Promise<void> {
      io.disconnect();
      await nr.close();
    },
  };
}

// GLIDE's core logs a warning for each NOSCRIPT it answers by loading the script, which the
// tests provoke on purpose; errors still print.
Logger.setLoggerConfig("error");

/**
 * A GLIDE `GlideClient` on one server, the third client RedisLock is tested with. GLIDE's
 * client is created connected, so `client()` is a getter for after connect() (a beforeAll);
 * close() (an afterAll) ends it, as GLIDE's native core keeps the process alive until then.
 */
export function glideClient(url: string) {
  let glide: GlideClient | undefined;
  const { hostname, port } = new URL(url);
  return {
    name: "GLIDE" as const,
    client(): GlideClient {
      if (glide === undefined) throw new Error("the GLIDE client is not connected yet");
      return glide;
    },
    async connect(): Promise<void> {
      glide = await GlideClient.createClient({
        addresses: [{ host: hostname || "127.0.0.1", port: Number(port || 6379) }],
        requestTimeout: 5_000,
      });
    },
    close(): void {
      glide?.close();
      glide = undefined;
    },
  };
}

/** True when a Redis answers PING at host:port within timeoutMs. */
export function pingRedis(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    let answer = "";
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once("error", () => finish(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      answer += chunk.toString();
      // +PONG, or -NOAUTH from a server that needs a password: either way a Redis is there.
      if (answer.includes("\r\n")) finish(answer.startsWith("+PONG") || answer.startsWith("-"));
    });
  });
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function startServer(port: number, extra: string[] = []): ChildProcess {
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", ...extra],
    { stdio: "ignore" },
  );
  child.on("error", () => {}); // a missing binary shows up as the ping timing out
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((done) => {
    child.once("exit", () => done());
    child.kill("SIGTERM");
  });
}

/**
 * REDIS_URL if set; else 127.0.0.1:6379 if it answers; else a redis-server started on a free
 * port (ended by stop()). Rejects, saying why, when none can be had.
 */
export async function findOrStartRedis(): Promise<RedisServer> {
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) {
    const url = new URL(fromEnv);
    const host = url.hostname || "127.0.0.1";
    const port = Number(url.port || 6379);
    if (!(await pingRedis(host, port, 2000))) {
      throw new Error(`REDIS_URL=${fromEnv} does not answer`);
    }
    return { host, port, url: fromEnv, origin: "REDIS_URL", stop: async () => {} };
  }
  if (await pingRedis("127.0.0.1", 6379, 2000)) {
    return {
      host: "127.0.0.1",
      port: 6379,
      url: "redis://127.0.0.1:6379",
      origin: "127.0.0.1:6379",
      stop: async () => {},
    };
  }
  try {
    return await startRedisServer();
  } catch (error) {
    throw new Error(
      `no REDIS_URL, nothing on 127.0.0.1:6379, and redis-server did not start (${String(error)})`,
    );
  }
}

/** A private redis-server that a fault test may crash and bring back. */
export interface RestartableRedisServer extends RedisServer {
  /** SIGKILL the server (no shutdown save), then start it again on the same port and dir. */
  crashAndRestart(): Promise<void>;
}

/**
 * A throwaway redis-server on a free port; stop() ends it. Without `appendonly` it keeps
 * nothing; with it, an append-only file with `appendfsync always` in a temp dir, so a crash
 * loses no acknowledged write.
 */
export async function startRedisServer(
  options: { appendonly?: boolean } = {},
): Promise<RestartableRedisServer> {
  const port = await freePort();
  const dir = options.appendonly ? mkdtempSync(join(tmpdir(), "idem-redis-aof-")) : undefined;
  const extra = dir ? ["--appendonly", "yes", "--appendfsync", "always", "--dir", dir] : [];
  const boot = async () => {
    const started = startServer(port, extra);
    try {
      await waitFor(() => pingRedis("127.0.0.1", port), 15_000, "redis-server");
    } catch (error) {
      await stopChild(started);
      throw error;
    }
    return started;
  };
  let child = await boot();
  return {
    host: "127.0.0.1",
    port,
    url: `redis://127.0.0.1:${port}`,
    origin: `redis-server started on port ${port}`,
    crashAndRestart: async () => {
      await new Promise<void>((done) => {
        child.once("exit", () => done());
        child.kill("SIGKILL");
      });
      child = await boot();
    },
    stop: async () => {
      await stopChild(child);
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisClusterServers {
  nodes: { host: string; port: number }[];
  stop(): Promise<void>;
}

/** Three masters, no replicas, on free ports in a temp dir; stop() ends them and cleans up. */
export async function startRedisCluster(): Promise<RedisClusterServers> {
  const dir = mkdtempSync(join(tmpdir(), "idem-redis-cluster-"));
  const ports = [await freePort(), await freePort(), await freePort()];
  const children = ports.map((port) =>
    startServer(port, [
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      join(dir, `nodes-${port}.conf`),
      "--dir",
      dir,
    ]),
  );
  const stop = async () => {
    await Promise.all(children.map(stopChild));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      await waitFor(() => pingRedis("127.0.0.1", port), 15_000, `cluster node ${port}`);
    }
    await run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((port) => `127.0.0.1:${port}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    for (const port of ports) {
      await waitFor(
        async () => {
          const { stdout } = await run("redis-cli", ["-p", String(port), "cluster", "info"]);
          return stdout.includes("cluster_state:ok");
        },
        15_000,
        `cluster_state:ok on ${port}`,
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: ports.map((port) => ({ host: "127.0.0.1", port })), stop };
}

/**
 * A private Redis Cluster and the three cluster clients on it: ioredis's `Cluster`, node-redis's
 * `createCluster` and GLIDE's `GlideClusterClient`. The names and getters are there at once, for registering tests; the
 * clients exist after start() (a beforeAll), and stop() (an afterAll) ends them and the nodes.
 */
export function redisClusterClients() {
  let servers: RedisClusterServers | undefined;
  let io: Cluster | undefined;
  let nr: ReturnType<typeof createCluster> | undefined;
  let glide: GlideClusterClient | undefined;
  const started = <T>(client: T | undefined): T => {
    if (client === undefined) throw new Error("the Redis Cluster is not started yet");
    return client;
  };
  return {
    /** Each client under the name test titles give it, as a getter for after start(). */
    named: [
      ["ioredis Cluster", () => started(io)],
      ["node-redis createCluster", () => started(nr)],
      ["GLIDE GlideClusterClient", () => started(glide)],
    ] as const,
    async start(): Promise<void> {
      servers = await startRedisCluster();
      io = new Cluster(servers.nodes, { lazyConnect: true });
      await io.connect();
      nr = createCluster({
        rootNodes: servers.nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
      });
      await nr.connect();
      glide = await GlideClusterClient.createClient({
        addresses: servers.nodes,
        requestTimeout: 5_000,
      });
    },
    async stop(): Promise<void> {
      io?.disconnect();
      await nr?.close();
      glide?.close();
      await servers?.stop();
    },
  };
}

/** One client RedisLock is tested with: the title its tests carry, and a getter for after start(). */
export interface RedisTarget {
  readonly title: string;
  readonly client: () => RedisScriptClient;
}

/**
 * The six clients RedisLock is tested with: ioredis, node-redis and GLIDE on the server at `url`,
 * and the three cluster clients on a private Redis Cluster. The titles and getters are there at
 * once, for registering tests; start() (a beforeAll) connects them all, stop() (an afterAll)
 * ends them and the cluster.
 */
export function redisTargets(url: string) {
  const pair = redisClientPair(url);
  const glide = glideClient(url);
  const cluster = redisClusterClients();
  const targets: readonly RedisTarget[] = [
    ...pair.named.map(([name, client]) => ({ title: `redis (${name})`, client: () => client })),
    { title: `redis (${glide.name})`, client: () => glide.client() },
    ...cluster.named.map(([name, client]) => ({ title: `redis cluster (${name})`, client })),
  ];
  return {
    targets,
    async start(): Promise<void> {
      await pair.connect();
      await glide.connect();
      await cluster.start();
    },
    async stop(): Promise<void> {
      await pair.close();
      glide.close();
      await cluster.stop();
    },
  };
}
