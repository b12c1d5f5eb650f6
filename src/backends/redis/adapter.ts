import { createHash } from "node:crypto";
import { hasMethods } from "../shared/options.js";

/**
 * The slice of an ioredis `Redis` or `Cluster` this backend uses. Structural, so the
 * package never imports ioredis at runtime.
 *
 * @example
 * ```ts
 * import { Cluster } from "ioredis";
 * import type { IoRedisScriptClient } from "gcp-pubsub-idempotency/redis";
 *
 * const client: IoRedisScriptClient = new Cluster([{ host: "10.0.0.3", port: 6379 }]);
 * ```
 */
export interface IoRedisScriptClient {
  /** Run a cached script by its SHA1 (`EVALSHA`). */
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** Run a script by its text (`EVAL`), when the server answered `NOSCRIPT`. */
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
}

/**
 * The slice of a node-redis client (`createClient`) or cluster (`createCluster`) used here.
 * Connect it (`await client.connect()`) before use.
 *
 * @example
 * ```ts
 * import { createClient } from "redis";
 * import { RedisLock, type NodeRedisScriptClient } from "gcp-pubsub-idempotency/redis";
 *
 * const client: NodeRedisScriptClient = await createClient({ url: "redis://127.0.0.1:6379" }).connect();
 * const backend = new RedisLock({ client });
 * ```
 */
export interface NodeRedisScriptClient {
  /** Run a cached script by its SHA1 (`EVALSHA`). */
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** Run a script by its text (`EVAL`), when the server answered `NOSCRIPT`. */
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/**
 * Any client RedisLock accepts: ioredis or node-redis, single node or cluster. RedisLock
 * never closes it: the client is yours.
 *
 * @example
 * ```ts
 * import { Redis } from "ioredis";
 * import { createClient } from "redis";
 * import type { RedisScriptClient } from "gcp-pubsub-idempotency/redis";
 *
 * const clients: RedisScriptClient[] = [new Redis(), await createClient().connect()];
 * ```
 */
export type RedisScriptClient = IoRedisScriptClient | NodeRedisScriptClient;

/** A Lua script with its SHA1, computed locally so EVALSHA needs no SCRIPT LOAD first. */
export interface Script {
  readonly text: string;
  readonly sha: string;
}

export function script(text: string): Script {
  return { text, sha: createHash("sha1").update(text).digest("hex") };
}

/** Runs one script against one key: EVALSHA, and EVAL once when the server lacks the script. */
export type ScriptRunner = (script: Script, key: string, args: string[]) => Promise<unknown>;

export function isScriptClient(client: unknown): client is RedisScriptClient {
  return isNodeRedis(client) || isIoRedis(client);
}

export function scriptRunner(client: RedisScriptClient): ScriptRunner {
  if (isNodeRedis(client)) {
    return async (s, key, args) => {
      const options = { keys: [key], arguments: args };
      try {
        return await client.evalSha(s.sha, options);
      } catch (error) {
        if (!isNoScript(error)) throw error;
        // EVAL also caches the script on the node that owns the key (a Cluster routes both
        // calls by the key), so the next EVALSHA there hits; SCRIPT LOAD could land elsewhere.
        return await client.eval(s.text, options);
      }
    };
  }
  const io = client as IoRedisScriptClient;
  return async (s, key, args) => {
    try {
      return await io.evalsha(s.sha, 1, key, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return await io.eval(s.text, 1, key, ...args);
    }
  };
}

// node-redis names it evalSha; ioredis only has the lower-case evalsha.
function isNodeRedis(client: unknown): client is NodeRedisScriptClient {
  return typeof client === "object" && hasMethods(client, ["evalSha", "eval"]);
}

function isIoRedis(client: unknown): client is IoRedisScriptClient {
  return typeof client === "object" && hasMethods(client, ["evalsha", "eval"]);
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NOSCRIPT");
}
