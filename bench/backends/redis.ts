/**
 * RedisLock on the shared Redis (a private key prefix, deleted afterwards) over ioredis,
 * ioredis with auto-pipelining, @redis/client and GLIDE (@valkey/valkey-glide), beside
 * Powertools' idempotency over @redis/client; and on a private three-node Redis Cluster
 * started for the run, over the three clients' cluster flavours.
 * The floor is a no-op EVALSHA on the same key slot per round trip RedisLock makes.
 */
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  makeIdempotent,
} from "@aws-lambda-powertools/idempotency";
import { CachePersistenceLayer } from "@aws-lambda-powertools/idempotency/cache";
import { createClient, createCluster } from "@redis/client";
import { GlideClient, GlideClusterClient } from "@valkey/valkey-glide";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
import { Cluster, Redis } from "ioredis";
import { type RedisScriptClient, script, scriptRunner } from "../../src/backends/redis/adapter.js";
import { startRedisCluster } from "../../test/support/redis.js";
import type { Settings } from "../runner.js";
import {
  type BackendBench,
  type Contender,
  expectRejection,
  KEYS,
  LEASE_MS,
  oursContender,
  RUN_ID,
  seed,
  TTL_MS,
  version,
} from "../suite.js";

const NOOP = script("return 1");

/** As many no-op script calls as RedisLock makes: 2 per first delivery or mutex cycle, else 1. */
export function redisFloor(
  name: string,
  client: RedisScriptClient,
  prefix: string,
  settings: Settings,
): Contender {
  const run = scriptRunner(client);
  const call = (key: string) => run(NOOP, prefix + key, []);
  return {
    name,
    role: "floor",
    ops: {
      first: async (i) => {
        const key = KEYS.first(name, i);
        await call(key);
        await call(key);
      },
      duplicate: (i) => call(KEYS.dup(i, settings)),
      contention: () => call(KEYS.held),
      mutex: async (_i, w) => {
        const key = KEYS.mutex(name, w);
        await call(key);
        await call(key);
      },
    },
  };
}

/** Powertools' makeIdempotent with its cache persistence layer (Redis via @redis/client). */
async function powertools(
  client: ConstructorParameters<typeof CachePersistenceLayer>[0]["client"],
  prefix: string,
  settings: Settings,
): Promise<{ contender: Contender; stop: () => Promise<void> }> {
  const context = {
    // Powertools keeps an in-progress record until the Lambda's remaining time runs out.
    getRemainingTimeInMillis: () => LEASE_MS,
    functionName: "bench",
    awsRequestId: "bench",
    callbackWaitsForEmptyEventLoop: false,
    functionVersion: "1",
    invokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:bench",
    memoryLimitInMB: "128",
    logGroupName: "bench",
    logStreamName: "bench",
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
  let openGate = () => {};
  const gate = new Promise<void>((done) => {
    openGate = done;
  });
  const handler = makeIdempotent(
    async (event: { id: string }, _context: unknown): Promise<void> => {
      if (event.id === KEYS.held) await gate;
    },
    {
      persistenceStore: new CachePersistenceLayer({ client }),
      config: new IdempotencyConfig({
        eventKeyJmesPath: "id",
        expiresAfterSeconds: TTL_MS / 1000,
      }),
      keyPrefix: `${prefix}pt`,
    },
  );
  const name = "powertools/@redis";
  for (let i = 0; i < settings.dupKeys; i++) await handler({ id: KEYS.dup(i, settings) }, context);
  const holder = handler({ id: KEYS.held }, context);
  await new Promise((done) => setTimeout(done, 50)); // let the held claim land
  return {
    contender: {
      name,
      role: "peer",
      floor: "floor/@redis",
      ops: {
        first: (i) => handler({ id: KEYS.first(name, i) }, context),
        // A completed key: Powertools answers with the stored result.
        duplicate: (i) => handler({ id: KEYS.dup(i, settings) }, context),
        contention: () =>
          expectRejection(handler({ id: KEYS.held }, context), IdempotencyAlreadyInProgressError),
      },
    },
    stop: async () => {
      openGate();
      await holder;
    },
  };
}

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

export const redisBench: BackendBench = {
  id: "redis",
  title: "Redis standalone",
  async start(settings) {
    const prefix = `bench:${RUN_ID}:`;
    const io = new Redis(REDIS_URL, { lazyConnect: true });
    await io.connect();
    const ioPipe = new Redis(REDIS_URL, { lazyConnect: true, enableAutoPipelining: true });
    await ioPipe.connect();
    const nr = createClient({ url: REDIS_URL });
    await nr.connect();
    const ptClient = createClient({ url: REDIS_URL });
    await ptClient.connect();
    const { hostname, port } = new URL(REDIS_URL);
    const glide = await GlideClient.createClient({
      addresses: [{ host: hostname || "127.0.0.1", port: Number(port || 6379) }],
    });
    const cleanUp = async () => {
      let cursor = "0";
      do {
        const [next, keys] = await io.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1_000);
        cursor = next;
        if (keys.length > 0) await io.unlink(...keys);
      } while (cursor !== "0");
    };
    try {
      const info = await io.info("server");
      const serverVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? "?";
      const locks = {
        io: new RedisLock({ client: io, prefix, ttlMs: TTL_MS }),
        ioPipe: new RedisLock({ client: ioPipe, prefix, ttlMs: TTL_MS }),
        nr: new RedisLock({ client: nr, prefix, ttlMs: TTL_MS }),
        glide: new RedisLock({ client: glide, prefix, ttlMs: TTL_MS }),
      };
      await seed(locks.io, settings);
      const pt = await powertools(ptClient, prefix, settings);
      const contenders: Contender[] = [
        oursContender("ours/ioredis", locks.io, settings, "floor/ioredis"),
        oursContender("ours/ioredis+autopipe", locks.ioPipe, settings, "floor/ioredis+autopipe"),
        oursContender("ours/@redis", locks.nr, settings, "floor/@redis"),
        oursContender("ours/glide", locks.glide, settings, "floor/glide"),
        pt.contender,
        redisFloor("floor/ioredis", io, prefix, settings),
        redisFloor("floor/ioredis+autopipe", ioPipe, prefix, settings),
        redisFloor("floor/@redis", nr, prefix, settings),
        redisFloor("floor/glide", glide, prefix, settings),
      ];
      return {
        versions: `Redis ${serverVersion} at ${REDIS_URL.replace(/\/\/[^@]*@/, "//")}; ioredis ${version("ioredis")}; @redis/client ${version("@redis/client")}; @valkey/valkey-glide ${version("@valkey/valkey-glide")}; @aws-lambda-powertools/idempotency ${version("@aws-lambda-powertools/idempotency")}`,
        floorNote:
          "a no-op EVALSHA per round trip RedisLock makes (2 for a first delivery or a mutex cycle, 1 otherwise), same client",
        open: async () => ({ contenders, close: async () => {} }),
        stop: async () => {
          await pt.stop();
          await cleanUp();
          io.disconnect();
          ioPipe.disconnect();
          await nr.close();
          await ptClient.close();
          glide.close();
        },
      };
    } catch (error) {
      await cleanUp().catch(() => {});
      io.disconnect();
      ioPipe.disconnect();
      await nr.close();
      await ptClient.close();
      glide.close();
      throw error;
    }
  },
};

export const redisClusterBench: BackendBench = {
  id: "redis-cluster",
  title: "Redis Cluster (3 masters, private)",
  async start(settings) {
    const servers = await startRedisCluster();
    const prefix = `bench:${RUN_ID}:`;
    const io = new Cluster(servers.nodes);
    const nr = createCluster({
      rootNodes: servers.nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })),
    });
    let glide: GlideClusterClient | undefined;
    try {
      await nr.connect();
      glide = await GlideClusterClient.createClient({ addresses: servers.nodes });
      const serverVersion =
        /redis_version:(\S+)/.exec(await io.nodes("master")[0]!.info("server"))?.[1] ?? "?";
      const ioLock = new RedisLock({ client: io, prefix, ttlMs: TTL_MS });
      await seed(ioLock, settings);
      const contenders: Contender[] = [
        oursContender("ours/ioredis", ioLock, settings, "floor/ioredis"),
        oursContender(
          "ours/@redis",
          new RedisLock({ client: nr, prefix, ttlMs: TTL_MS }),
          settings,
          "floor/@redis",
        ),
        oursContender(
          "ours/glide",
          new RedisLock({ client: glide, prefix, ttlMs: TTL_MS }),
          settings,
          "floor/glide",
        ),
        redisFloor("floor/ioredis", io, prefix, settings),
        redisFloor("floor/@redis", nr, prefix, settings),
        redisFloor("floor/glide", glide, prefix, settings),
      ];
      return {
        versions: `Redis ${serverVersion}, 3 masters on ${servers.nodes.map((n) => n.port).join(", ")}; ioredis Cluster, @redis/client createCluster, GLIDE GlideClusterClient`,
        floorNote: "a no-op EVALSHA per round trip, routed by the same key",
        open: async () => ({ contenders, close: async () => {} }),
        stop: async () => {
          io.disconnect();
          await nr.close();
          glide?.close();
          await servers.stop();
        },
      };
    } catch (error) {
      io.disconnect();
      await nr.close().catch(() => {});
      glide?.close();
      await servers.stop();
      throw error;
    }
  },
};
