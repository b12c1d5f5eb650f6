/**
 * `RedisLock`, for ioredis, node-redis and GLIDE (`@valkey/valkey-glide`) clients, standalone
 * or Cluster.
 *
 * @module gcp-pubsub-idempotency/redis
 */

import { randomUUID } from "node:crypto";
import { DEFAULT_TTL_MS } from "../../core/constants.js";
import { BackendError, InvalidConfiguration } from "../../core/errors.js";
import type {
  BackendSupport,
  Claim,
  ClaimOptions,
  ClaimOutcome,
  ForceReleaseOutcome,
  InspectedRecord,
  LockBackend,
} from "../../core/port.js";
import { claimFingerprint, completeResult } from "../../core/record-fields.js";
import { offerTrustedPort } from "../../core/trusted-port.js";
import {
  assertFencingId,
  assertPositiveMs,
  assertValidKey,
  describe,
  knownOptions,
  readOptions,
  ttlOption,
} from "../../core/validate.js";
import { storeError } from "../shared/store-call.js";
import {
  isScriptClient,
  type RedisScriptClient,
  type Script,
  type ScriptRunner,
  scriptRunner,
} from "./adapter.js";
import { CLAIM, COMPLETE, FORCE_RELEASE, INSPECT, RELEASE, RENEW } from "./scripts.js";

export type {
  GlideScript,
  GlideScriptClient,
  IoRedisScriptClient,
  NodeRedisScriptClient,
  RedisScriptClient,
} from "./adapter.js";

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
   * An already-created client: ioredis `Redis` or `Cluster`, node-redis `createClient()` /
   * `createCluster()`, or GLIDE `GlideClient` / `GlideClusterClient` (`@valkey/valkey-glide`).
   * A node-redis client must be connected (`await client.connect()`); ioredis connects by
   * itself; GLIDE's `createClient` gives a connected one. RedisLock never closes it: the client
   * is yours (a GLIDE client keeps the process alive until you `close()` it).
   */
  client: RedisScriptClient;
  /**
   * How long a DONE key suppresses duplicates: whole ms, 1 to `MAX_TTL_MS` (10 years);
   * default {@link DEFAULT_TTL_MS}.
   */
  ttlMs?: number | undefined;
  /** Prepended to every idempotency key; default "idem:". Printable ASCII, 1–128 chars. */
  prefix?: string | undefined;
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

// Each script is the prelude's helpers its file calls, then the file (scripts.ts), assembled
// once at module load; the SHA is that of the assembled text, so EVALSHA/EVAL send and cache
// exactly it.

/** The options RedisLock takes; any other name is refused. */
const NAMES = ["client", "ttlMs", "prefix"] as const;
const KNOWN = knownOptions(NAMES, "backend");

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
  /** ttlMs as the scripts take it. */
  private readonly ttlText: string;
  /**
   * Results up to 16 MiB and fingerprints, fields of the record's hash. A Redis string may
   * reach 512 MB, but every duplicate of a once() key reads its result back.
   */
  readonly supports: BackendSupport = {
    results: true,
    fingerprints: true,
    maxResultBytes: MAX_RESULT_BYTES,
  };

  /**
   * Checks every option before any I/O: a missing or unusable `client`, a `ttlMs` that is
   * not a whole number of ms from 1 to `MAX_TTL_MS`, or a bad `prefix` throws
   * {@link InvalidConfiguration} naming the option.
   */
  constructor(options: RedisLockOptions) {
    const read = readOptions("RedisLock", options, false, NAMES, KNOWN);
    if (!isScriptClient(read.client)) {
      throw new InvalidConfiguration(
        "RedisLock option client must be an ioredis Redis/Cluster, a node-redis client/cluster " +
          "or a GLIDE GlideClient/GlideClusterClient (with evalsha()/evalSha() and eval(), or " +
          `invokeScript()), got ${describe(read.client)}`,
      );
    }
    this.ttlMs = ttlOption(read.ttlMs, DEFAULT_TTL_MS);
    this.ttlText = String(this.ttlMs);
    const prefix = read.prefix === undefined ? DEFAULT_REDIS_PREFIX : read.prefix;
    assertValidPrefix(prefix);
    this.prefix = prefix;
    this.run = scriptRunner(read.client);
    if (new.target === RedisLock) {
      offerTrustedPort(this, {
        claim: (key, leaseMs, options) => this.trustedClaim(key, leaseMs, options?.fingerprint),
        complete: (claim, result) => this.trustedComplete(claim, result),
        release: (claim) => this.trustedRelease(claim),
        renew: (claim, leaseMs) => this.trustedRenew(claim, leaseMs),
      });
    }
  }

  async claim(key: string, leaseMs: number, options?: ClaimOptions): Promise<ClaimOutcome> {
    assertValidKey(key);
    assertPositiveMs("leaseMs", leaseMs);
    return this.trustedClaim(key, leaseMs, claimFingerprint(options));
  }

  async complete(claim: Claim, result?: string): Promise<boolean> {
    assertValidKey(claim.key);
    return this.trustedComplete(claim, completeResult(result, MAX_RESULT_BYTES));
  }

  async release(claim: Claim): Promise<void> {
    assertValidKey(claim.key);
    return this.trustedRelease(claim);
  }

  async renew(claim: Claim, leaseMs: number): Promise<boolean> {
    assertValidKey(claim.key);
    assertPositiveMs("leaseMs", leaseMs);
    return this.trustedRenew(claim, leaseMs);
  }

  // Operator calls (the CLI's inspect and release).

  async inspect(key: string): Promise<InspectedRecord | undefined> {
    assertValidKey(key);
    const reply = await this.call("inspect", key, INSPECT, []);
    if (Array.isArray(reply)) {
      const [now, state, fencingId, leaseExpiresAt, expiresAt] = reply as unknown[];
      if (isInt(now) && reply.length === 1) return undefined;
      if (
        isInt(now) &&
        (state === "claimed" || state === "done") &&
        isInt(fencingId) &&
        isInt(leaseExpiresAt) &&
        isInt(expiresAt)
      ) {
        const record: InspectedRecord = { key, state, fencingId, leaseExpiresAt, expiresAt, now };
        const fields = storedFields(reply, 5);
        if (fields !== undefined) return { ...record, ...fields };
      }
    }
    throw unexpectedReply("inspect", key, reply);
  }

  async forceRelease(key: string, fencingId: number): Promise<ForceReleaseOutcome> {
    assertValidKey(key);
    assertFencingId(fencingId);
    const args = [String(fencingId), this.ttlText];
    const reply = await this.call("forceRelease", key, FORCE_RELEASE, args);
    if (Array.isArray(reply) && reply.length === 2) {
      const [status, fence] = reply as unknown[];
      if (isInt(fence)) {
        if (status === "released" || status === "changed") return { status, fencingId: fence };
        if (status === "done" || status === "absent") return { status };
      }
    }
    throw unexpectedReply("forceRelease", key, reply);
  }

  // The port methods once their arguments are checked: what the trusted port runs.

  private async trustedClaim(
    key: string,
    leaseMs: number,
    fingerprint?: string,
  ): Promise<ClaimOutcome> {
    // Without a fingerprint the script gets the three arguments it always had.
    const args = [String(leaseMs), this.ttlText, randomUUID()];
    if (fingerprint !== undefined) args.push(fingerprint);
    const reply = await this.call("claim", key, CLAIM, args);
    // claim.lua answers in integers where the record keeps nothing more: 0 done, a positive
    // leaseExpiresAt held, {fence, until} won, a result's text done; else {'held', until, fp}
    // or {'done', ...the stored pairs}.
    if (reply === 0) return DONE;
    if (isInt(reply) && reply > 0) return { status: "held", leaseExpiresAt: reply };
    // A done record's result alone comes back as its text (claim.lua, Output).
    const result = text(reply);
    if (result !== undefined && result !== "") return { status: "done", result };
    if (Array.isArray(reply)) {
      if (reply.length === 2) {
        const fencingId: unknown = reply[0];
        const leaseExpiresAt: unknown = reply[1];
        if (isInt(fencingId) && isInt(leaseExpiresAt)) {
          return { status: "won", claim: { key, fencingId, leaseExpiresAt } };
        }
      } else {
        const status = text(reply[0]);
        if (status === "done") {
          const fields = storedFields(reply, 1);
          if (fields !== undefined) return { status: "done", ...fields };
        } else if (status === "held" && reply.length === 3 && isInt(reply[1]) && reply[1] > 0) {
          const stored = text(reply[2]);
          if (stored) return { status: "held", leaseExpiresAt: reply[1], fingerprint: stored };
        }
      }
    }
    throw unexpectedReply("claim", key, reply);
  }

  private async trustedComplete(claim: Claim, result?: string): Promise<boolean> {
    // Without a result the script gets the two arguments it always had; a result goes as is.
    const args = [String(claim.fencingId), this.ttlText];
    if (result !== undefined) args.push(result);
    return flag("complete", claim.key, await this.call("complete", claim.key, COMPLETE, args));
  }

  private async trustedRelease(claim: Claim): Promise<void> {
    const args = [String(claim.fencingId), this.ttlText];
    flag("release", claim.key, await this.call("release", claim.key, RELEASE, args));
  }

  private async trustedRenew(claim: Claim, leaseMs: number): Promise<boolean> {
    const args = [String(claim.fencingId), String(leaseMs), this.ttlText];
    return flag("renew", claim.key, await this.call("renew", claim.key, RENEW, args));
  }

  /**
   * Run one script on the record of `key`. Every failure (connection, timeout, READONLY, a
   * script error) becomes a BackendError naming the operation and the key; the verbs read
   * the reply themselves, and {@link unexpectedReply} names a reply no script gives.
   */
  private async call(operation: string, key: string, s: Script, args: string[]): Promise<unknown> {
    try {
      return await this.run(s, this.prefix + key, args);
    } catch (error) {
      throw storeError("redis", operation, key, error);
    }
  }
}

/** A claim's answer for a done key: nothing in it varies, so one frozen object serves all. */
const DONE: ClaimOutcome = Object.freeze({ status: "done" });

/**
 * The largest result RedisLock keeps, in UTF-8 bytes. A Redis string may reach 512 MB, but the
 * result lives in the record, and every duplicate's claim reads the record and carries the
 * result back over the wire: a record must stay cheap to read. 16 MiB, as InMemoryLock's.
 */
const MAX_RESULT_BYTES = 16 * 1024 * 1024;

/** A string field of a reply: GLIDE may answer a Buffer where the others answer a string. */
function text(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString("utf8");
  return undefined;
}

/**
 * The `'fingerprint', fp` and `'result', result` pairs of a reply from `from` on, each present
 * only when stored; undefined when the rest of the reply is anything else.
 */
function storedFields(
  reply: readonly unknown[],
  from: number,
): { fingerprint?: string; result?: string } | undefined {
  const fields: { fingerprint?: string; result?: string } = {};
  for (let i = from; i < reply.length; i += 2) {
    const name = text(reply[i]);
    const value = text(reply[i + 1]);
    if (value === undefined || (name !== "fingerprint" && name !== "result")) return undefined;
    if (fields[name] !== undefined) return undefined;
    fields[name] = value;
  }
  return fields;
}

function unexpectedReply(operation: string, key: string, reply: unknown): BackendError {
  const text = JSON.stringify(reply)?.slice(0, 200);
  return new BackendError("redis", operation, key, new Error(`unexpected script reply ${text}`));
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

/** A 1 / 0 reply as true / false; anything else is a reply no script gives. */
function flag(operation: string, key: string, reply: unknown): boolean {
  if (reply === 1) return true;
  if (reply === 0) return false;
  throw unexpectedReply(operation, key, reply);
}
