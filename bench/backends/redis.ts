/**
 * RedisLock on the shared Redis (a private key prefix, deleted afterwards) over ioredis,
 * ioredis with auto-pipelining, @redis/client and GLIDE (@valkey/valkey-glide), beside
 * Powertools' idempotency over @redis/client; and on a private three-node Redis Cluster
 * started for the run, over the three clients' cluster flavours.
 * The floor makes the same script calls, each doing the same server-side reads and writes
 * (the claim writes a fixed token where RedisLock writes a random one).
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
  check,
  expectRejection,
  KEYS,
  LEASE_MS,
  oursContender,
  RUN_ID,
  seed,
  TTL_MS,
  version,
} from "../suite.js";

// The floor's scripts: the same reads and writes RedisLock's scripts make on the server
// (TIME, HMGET of the same fields, HSET of the same fields, PEXPIREAT), with no more logic
// than deciding whether to write. "Ours ÷ floor" is then the cost of our own code alone.
const TIME = "local t = redis.call('TIME'); local now = t[1] * 1000 + math.floor(t[2] / 1000)";
const FLOOR_CLAIM = script(`${TIME}
local r = redis.call('HMGET', KEYS[1], 'state', 'fencingId', 'leaseExpiresAt', 'expiresAt')
if r[1] == 'done' or (r[1] and tonumber(r[3]) > now) then return {r[1], r[2], r[3]} end
local lease = now + tonumber(ARGV[1])
redis.call('HSET', KEYS[1], 'state', 'claimed', 'fencingId', string.format('%.0f', (tonumber(r[2]) or 0) + 1),
  'leaseExpiresAt', string.format('%.0f', lease), 'expiresAt', string.format('%.0f', lease + tonumber(ARGV[2])), 'token', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', lease + tonumber(ARGV[2])))
return {'won', 1, lease}`);
const FLOOR_COMPLETE = script(`${TIME}
local r = redis.call('HMGET', KEYS[1], 'state', 'fencingId', 'expiresAt')
if not r[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', 'done', 'expiresAt', string.format('%.0f', now + tonumber(ARGV[1])))
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', now + tonumber(ARGV[1])))
return 1`);
const FLOOR_RELEASE = script(`${TIME}
local r = redis.call('HMGET', KEYS[1], 'state', 'fencingId', 'expiresAt')
if not r[1] then return 0 end
redis.call('HSET', KEYS[1], 'fencingId', string.format('%.0f', tonumber(r[2]) + 1),
  'leaseExpiresAt', string.format('%.0f', now), 'expiresAt', string.format('%.0f', now + tonumber(ARGV[1])))
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', now + tonumber(ARGV[1])))
return 1`);

/**
 * The server work RedisLock does, with the plainest client code: one script call per round
 * trip RedisLock makes (2 per first delivery or mutex cycle, else 1), each doing the same
 * reads and writes as ours. The keys are the floor's own, under the same prefix.
 */
export function redisFloor(
  name: string,
  client: RedisScriptClient,
  prefix: string,
  settings: Settings,
): Contender {
  const run = scriptRunner(client);
  const lease = String(LEASE_MS);
  const ttl = String(TTL_MS);
  const claim = (key: string) => run(FLOOR_CLAIM, prefix + key, [lease, ttl, "floor-token"]);
  return {
    name,
    role: "floor",
    ops: {
      first: async (i) => {
        const key = KEYS.first(name, i);
        await claim(key);
        await run(FLOOR_COMPLETE, prefix + key, [ttl]);
      },
      duplicate: (i) => claim(KEYS.dup(i, settings)),
      contention: () => claim(KEYS.held),
      mutex: async (_i, w) => {
        const key = KEYS.mutex(name, w);
        await claim(key);
        await run(FLOOR_RELEASE, prefix + key, [ttl]);
      },
    },
  };
}

/** used_cpu_user + used_cpu_sys from INFO cpu, in µs: the server's own count, to the µs. */
export async function redisCpu(info: () => Promise<string>): Promise<number | undefined> {
  const text = await info();
  const user = /used_cpu_user:([\d.]+)/.exec(text)?.[1];
  const sys = /used_cpu_sys:([\d.]+)/.exec(text)?.[1];
  return user === undefined || sys === undefined ? undefined : (Number(user) + Number(sys)) * 1e6;
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
  // How often the body ran for each key, so each cell can prove Powertools did its work, as
  // ours is held to (a first delivery runs the body once, a duplicate never again).
  const bodyRuns = new Map<string, number>();
  const handler = makeIdempotent(
    async (event: { id: string }, _context: unknown): Promise<void> => {
      bodyRuns.set(event.id, (bodyRuns.get(event.id) ?? 0) + 1);
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
  check(
    bodyRuns.size === settings.dupKeys + 1 && [...bodyRuns.values()].every((n) => n === 1),
    "powertools ran the body once for each seeded key",
  );
  const ranOnce = (id: string, what: string) =>
    check(bodyRuns.get(id) === 1, `powertools ${what}: the body ran ${bodyRuns.get(id) ?? 0}×`);
  return {
    contender: {
      name,
      role: "peer",
      floor: "floor/@redis",
      ops: {
        first: async (i) => {
          const id = KEYS.first(name, i);
          await handler({ id }, context);
          ranOnce(id, `first delivery of ${id}`);
          bodyRuns.delete(id); // fresh keys never come back; keep the map small
        },
        // A completed key: Powertools answers with the stored result, without the body.
        duplicate: async (i) => {
          const id = KEYS.dup(i, settings);
          await handler({ id }, context);
          ranOnce(id, `duplicate of ${id}`);
        },
        contention: async () => {
          await expectRejection(
            handler({ id: KEYS.held }, context),
            IdempotencyAlreadyInProgressError,
          );
          ranOnce(KEYS.held, "contention on the held key");
        },
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
          "one EVALSHA per round trip RedisLock makes (2 for a first delivery or a mutex cycle, 1 otherwise), same client, each script doing the same TIME, HMGET, HSET and PEXPIREAT as ours with no more logic than whether to write",
        open: async () => ({ contenders, close: async () => {} }),
        serverCpu: () => redisCpu(() => io.info("cpu")),
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
        floorNote:
          "one EVALSHA per round trip, routed by the same key, doing the same reads and writes as ours",
        open: async () => ({ contenders, close: async () => {} }),
        serverCpu: async () => {
          const each = await Promise.all(
            io.nodes("master").map((n) => redisCpu(() => n.info("cpu"))),
          );
          return each.some((x) => x === undefined)
            ? undefined
            : each.reduce<number>((sum, x) => sum + (x ?? 0), 0);
        },
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
