/**
 * `RedisLock`, for ioredis and node-redis clients, standalone or Cluster.
 *
 * @module gcp-pubsub-idempotency/redis
 */
import { randomUUID } from "node:crypto";
import { DEFAULT_TTL_MS } from "../../core/constants.js";
import { BackendError, InvalidConfiguration } from "../../core/errors.js";
import type { Claim, ClaimOutcome, LockBackend } from "../../core/types.js";
import {
  assertPositiveMs,
  assertValidKey,
  describe,
  readOptions,
  ttlOption,
} from "../../core/validate.js";
import {
  isScriptClient,
  type RedisScriptClient,
  type Script,
  type ScriptRunner,
  script,
  scriptRunner,
} from "./adapter.js";
import claimLua from "./claim.lua";
import completeLua from "./complete.lua";
import preludeLua from "./prelude.lua";
import releaseLua from "./release.lua";
import renewLua from "./renew.lua";

export type { IoRedisScriptClient, NodeRedisScriptClient, RedisScriptClient } from "./adapter.js";

/**
 * Options of {@link RedisLock}.
 *
 * @example
 * ```ts
 * import { Redis } from "ioredis";
 * import { RedisLock, type RedisLockOptions } from "gcp-pubsub-idempotency/redis";
 *
 * const options: RedisLockOptions = {
 *   client: new Redis("redis://127.0.0.1:6379"),
 *   prefix: "orders-svc:",
 *   ttlMs: 24 * 60 * 60_000,
 * };
 * const backend = new RedisLock(options);
 * ```
 */
export interface RedisLockOptions {
  /**
   * An already-created client: ioredis `Redis` or `Cluster`, or node-redis `createClient()` /
   * `createCluster()`. A node-redis client must be connected (`await client.connect()`);
   * ioredis connects by itself. RedisLock never closes it: the client is yours.
   */
  client: RedisScriptClient;
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to `MAX_TTL_MS` (10 years);
   * default {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number;
  /** Prepended to every idempotency key; default "idem:". Printable ASCII, 1–128 chars. */
  prefix?: string;
}

/**
 * The default `prefix` of {@link RedisLock}: every record lives at `idem:` + the key.
 *
 * @example
 * ```ts
 * import { DEFAULT_REDIS_PREFIX } from "gcp-pubsub-idempotency/redis";
 * import { Redis } from "ioredis";
 *
 * // Look at the record of one key with redis-cli or a client.
 * const record = await new Redis().hgetall(`${DEFAULT_REDIS_PREFIX}orders:42`);
 * ```
 */
export const DEFAULT_REDIS_PREFIX = "idem:";
const MAX_PREFIX_LENGTH = 128;
// Lease + ttl is added to an epoch-ms time inside Lua, where numbers are doubles: the caps
// (MAX_LEASE_MS, MAX_TTL_MS) keep the sum an exact integer far below 2^53.

// Each script is prelude.lua (int(), now_ms()) followed by the verb's own file, assembled once
// here; the SHA is that of the assembled text, so EVALSHA/EVAL send and cache exactly it.
const withPrelude = (body: string): Script => script(`${preludeLua}\n${body}`);
const CLAIM = withPrelude(claimLua);
const COMPLETE = withPrelude(completeLua);
const RELEASE = withPrelude(releaseLua);
const RENEW = withPrelude(renewLua);

/**
 * Redis backend: one hash per key, each verb one Lua script (one EVALSHA round trip),
 * judged by the server's `TIME`, reaped by `PEXPIREAT` at the record's `expiresAt` (so there
 * is no `purgeExpired`). Every script touches exactly one key, so it works on Redis Cluster.
 *
 * The constructor does no I/O and throws {@link InvalidConfiguration} for a bad client,
 * `ttlMs` or `prefix`. Store failures reject with a {@link BackendError} naming the verb
 * and the key.
 *
 * @example
 * ```ts
 * import { lock } from "gcp-pubsub-idempotency";
 * import { RedisLock } from "gcp-pubsub-idempotency/redis";
 * import { Redis } from "ioredis";
 *
 * const backend = new RedisLock({ client: new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379"), prefix: "orders-svc:" });
 * await lock("orders:4711", { backend }, async () => {});
 * ```
 */
export class RedisLock implements LockBackend {
  /** How long a DONE key suppresses duplicates, in ms; Redis deletes the record at its end. */
  readonly ttlMs: number;
  /** Prepended to every idempotency key to form the Redis key. */
  readonly prefix: string;
  private readonly run: ScriptRunner;

  /**
   * Checks every option before any I/O: a missing or unusable `client`, a `ttlMs` that is
   * not a whole number of ms from 1 to `MAX_TTL_MS`, or a bad `prefix` throws
   * {@link InvalidConfiguration} naming the option.
   */
  constructor(options: RedisLockOptions) {
    const read = readOptions("RedisLock", options, false, ["client", "ttlMs", "prefix"]);
    if (!isScriptClient(read.client)) {
      throw new InvalidConfiguration(
        "RedisLock option client must be an ioredis Redis/Cluster or a node-redis client/cluster " +
          `(with evalsha()/evalSha() and eval()), got ${describe(read.client)}`,
      );
    }
    this.ttlMs = ttlOption(read.ttlMs, DEFAULT_TTL_MS);
    const prefix = read.prefix === undefined ? DEFAULT_REDIS_PREFIX : read.prefix;
    assertValidPrefix(prefix);
    this.prefix = prefix;
    this.run = scriptRunner(read.client);
  }

  async claim(key: string, leaseMs: number): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    const reply = await this.call("claim", key, CLAIM, [
      String(leaseMs),
      String(this.ttlMs),
      randomUUID(),
    ]);
    if (Array.isArray(reply) && reply.length === 3) {
      const [status, fencingId, until] = reply as unknown[];
      if (isInt(fencingId) && isInt(until)) {
        if (status === "won") {
          return { status: "won", claim: { key, fencingId, leaseExpiresAt: until } };
        }
        if (status === "held") return { status: "held", leaseExpiresAt: until };
        if (status === "done") return { status: "done" };
      }
    }
    throw unexpected("claim", key, reply);
  }

  async complete(claim: Claim): Promise<boolean> {
    assertValidKey(claim.key);
    const reply = await this.call("complete", claim.key, COMPLETE, [
      String(claim.fencingId),
      String(this.ttlMs),
    ]);
    if (reply === 1 || reply === 0) return reply === 1;
    throw unexpected("complete", claim.key, reply);
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    const reply = await this.call("release", claim.key, RELEASE, [
      String(claim.fencingId),
      String(this.ttlMs),
    ]);
    if (reply !== 1 && reply !== 0) throw unexpected("release", claim.key, reply);
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    const reply = await this.call("renew", claim.key, RENEW, [
      String(claim.fencingId),
      String(leaseMs),
      String(this.ttlMs),
    ]);
    if (Array.isArray(reply) && (reply[0] === 1 || reply[0] === 0)) return reply[0] === 1;
    throw unexpected("renew", claim.key, reply);
  }

  /** Every store failure (connection, timeout, READONLY, a script error) names verb and key. */
  private async call(verb: string, key: string, s: Script, args: string[]): Promise<unknown> {
    try {
      return await this.run(s, this.prefix + key, args);
    } catch (error) {
      throw new BackendError("redis", verb, key, error);
    }
  }
}

function assertValidPrefix(prefix: unknown): asserts prefix is string {
  if (
    typeof prefix !== "string" ||
    prefix.length === 0 ||
    prefix.length > MAX_PREFIX_LENGTH ||
    !/^[\x20-\x7e]+$/.test(prefix)
  ) {
    throw new InvalidConfiguration(
      `prefix must be 1 to ${MAX_PREFIX_LENGTH} printable ASCII characters, got ${describe(prefix)}`,
    );
  }
}

function isInt(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value);
}

function unexpected(verb: string, key: string, reply: unknown): BackendError {
  return new BackendError(
    "redis",
    verb,
    key,
    new Error(`unexpected script reply ${JSON.stringify(reply)?.slice(0, 200)}`),
  );
}
