import { createHash } from "node:crypto";
import { importPeer } from "../../core/peer.js";
import { hasMethods } from "../shared/has-methods.js";

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
 * A GLIDE `Script` (from `@valkey/valkey-glide`), as far as `invokeScript` reads it.
 *
 * @example
 * ```ts
 * import { Script } from "@valkey/valkey-glide";
 * import type { GlideScript } from "gcp-pubsub-idempotency/redis";
 *
 * const script: GlideScript = new Script("return 1");
 * ```
 */
export interface GlideScript {
  /** The SHA1 of the script's text, which GLIDE sends with `EVALSHA`. */
  getHash(): string;
}

/**
 * The slice of a GLIDE client (`GlideClient` or `GlideClusterClient` from
 * `@valkey/valkey-glide`, the Valkey project's client) used here. Scripts run through GLIDE's
 * `Script` and `invokeScript`: GLIDE sends `EVALSHA` and loads the script itself when the node
 * answers `NOSCRIPT`; on a cluster it routes by the key.
 *
 * @example
 * ```ts
 * import { GlideClusterClient } from "@valkey/valkey-glide";
 * import { RedisLock, type GlideScriptClient } from "gcp-pubsub-idempotency/redis";
 *
 * const client: GlideScriptClient = await GlideClusterClient.createClient({
 *   addresses: [{ host: "10.0.0.3", port: 6379 }],
 * });
 * const backend = new RedisLock({ client });
 * ```
 */
export interface GlideScriptClient {
  /** Run a script with its keys and arguments (`EVALSHA`, then `SCRIPT LOAD` on `NOSCRIPT`). */
  invokeScript(script: GlideScript, options: { keys: string[]; args: string[] }): Promise<unknown>;
}

/**
 * Any client RedisLock accepts: ioredis, node-redis or GLIDE, single node or cluster.
 * RedisLock never closes it: the client is yours.
 *
 * @example
 * ```ts
 * import { GlideClient } from "@valkey/valkey-glide";
 * import { Redis } from "ioredis";
 * import { createClient } from "redis";
 * import type { RedisScriptClient } from "gcp-pubsub-idempotency/redis";
 *
 * const clients: RedisScriptClient[] = [
 *   new Redis(),
 *   await createClient().connect(),
 *   await GlideClient.createClient({ addresses: [{ host: "127.0.0.1", port: 6379 }] }),
 * ];
 * ```
 */
export type RedisScriptClient = IoRedisScriptClient | NodeRedisScriptClient | GlideScriptClient;

/** A Lua script with its SHA1, computed locally so EVALSHA needs no SCRIPT LOAD first. */
export interface Script {
  readonly text: string;
  readonly sha: string;
  /**
   * The same script for a server that refuses a write after TIME until the script turns on
   * effects replication (Redis 4; 5 and 6 with `lua-replicate-commands no`): scripts.ts.
   */
  readonly legacy?: Script | undefined;
}

export function script(text: string): Script {
  return { text, sha: createHash("sha1").update(text).digest("hex") };
}

/**
 * Runs one script against one key: EVALSHA, and EVAL once when the server lacks the script
 * (on GLIDE, invokeScript does the same with SCRIPT LOAD). A server that refuses the script's
 * write after TIME gets its legacy text, then and on every later call of this runner.
 */
export type ScriptRunner = (script: Script, key: string, args: string[]) => Promise<unknown>;

export function isScriptClient(client: unknown): client is RedisScriptClient {
  return isGlide(client) || isNodeRedis(client) || isIoRedis(client);
}

/** One script call by SHA or by text; the runner adds the fallbacks. */
type Send = (s: Script, key: string, args: string[]) => Promise<unknown>;

export function scriptRunner(client: RedisScriptClient): ScriptRunner {
  if (isGlide(client)) {
    // invokeScript loads the script itself on NOSCRIPT: no by-text call.
    return runner((s, key, args) => {
      const made = glideScripts.get(s);
      const options = { keys: [key], args };
      return made !== undefined
        ? client.invokeScript(made, options)
        : glideScript(s).then((g) => client.invokeScript(g, options));
    });
  }
  if (isNodeRedis(client)) {
    // EVAL also caches the script on the node that owns the key (a Cluster routes both
    // calls by the key), so the next EVALSHA there hits; SCRIPT LOAD could land elsewhere.
    return runner(
      (s, key, args) => client.evalSha(s.sha, { keys: [key], arguments: args }),
      (s, key, args) => client.eval(s.text, { keys: [key], arguments: args }),
    );
  }
  const io = client as IoRedisScriptClient;
  return runner(
    (s, key, args) => io.evalsha(s.sha, 1, key, ...args),
    (s, key, args) => io.eval(s.text, 1, key, ...args),
  );
}

/**
 * EVALSHA; on NOSCRIPT the text (EVAL); on a refused write after TIME the script's legacy
 * text, for that call and every later one of this runner. One catch per call, on the
 * client's promise: the common call adds one promise and one closure to the client's own.
 */
function runner(bySha: Send, byText?: Send): ScriptRunner {
  let legacy = false;
  const run = (s: Script, sent: Script, key: string, args: string[]): Promise<unknown> =>
    bySha(sent, key, args).catch((error: unknown) => recover(error, s, sent, key, args));
  const recover = async (
    error: unknown,
    s: Script,
    sent: Script,
    key: string,
    args: string[],
  ): Promise<unknown> => {
    let failure = error;
    if (byText !== undefined && isNoScript(failure)) {
      try {
        return await byText(sent, key, args);
      } catch (again) {
        failure = again;
      }
    }
    if (sent === s && s.legacy !== undefined && isLegacyRefusal(failure)) {
      legacy = true;
      return run(s, s.legacy, key, args);
    }
    throw failure;
  };
  return (s, key, args) => run(s, legacy && s.legacy !== undefined ? s.legacy : s, key, args);
}

// GLIDE keeps a script's text in its native core, registered by constructing its own Script
// class; so that class is needed, and it is loaded from @valkey/valkey-glide on a GLIDE
// client's first call only (the package imports no driver up front). One GLIDE Script per
// script of this module, kept for the life of the process: never released, never rebuilt.
const glideScripts = new Map<Script, GlideScript>();
let glideScriptClass: Promise<new (code: string) => GlideScript> | undefined;

async function glideScript(s: Script): Promise<GlideScript> {
  glideScriptClass ??= importPeer(
    "RedisLock over a GLIDE client",
    "@valkey/valkey-glide",
    () => import("@valkey/valkey-glide"),
  ).then((glide) => glide.Script);
  const Class = await glideScriptClass;
  let made = glideScripts.get(s);
  if (made === undefined) {
    made = new Class(s.text);
    // Both hash the same text; a differing hash would run another script than this one.
    if (made.getHash() !== s.sha)
      throw new Error(`GLIDE hashed a script as ${made.getHash()}, not ${s.sha}`);
    glideScripts.set(s, made);
  }
  return made;
}

// GLIDE has invokeScript and neither evalsha nor evalSha.
function isGlide(client: unknown): client is GlideScriptClient {
  return typeof client === "object" && hasMethods(client, ["invokeScript"]);
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

/**
 * Redis 3.2 to 6 without effects replication refuse a script's write after TIME with this
 * error, before the write: nothing was changed, so the legacy text may run in its place.
 */
function isLegacyRefusal(error: unknown): boolean {
  return (
    error instanceof Error &&
    error.message.includes("Write commands not allowed after non deterministic commands")
  );
}
