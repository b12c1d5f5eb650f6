/**
 * Default `leaseMs`: the mutual-exclusion window while the work runs, 15 minutes (in ms).
 *
 * @example
 * ```ts
 * import { DEFAULT_LEASE_MS, InMemoryLock, lock } from "gcp-pubsub-idempotency";
 *
 * // Twice the default for a slow job; or turn on `heartbeat` instead.
 * await lock("reports:daily", { backend: new InMemoryLock(), leaseMs: 2 * DEFAULT_LEASE_MS },
 *   async () => {});
 * ```
 */
export const DEFAULT_LEASE_MS = 15 * 60_000;
/**
 * Default backend `ttlMs`: how long a DONE key suppresses duplicates, 1 hour (in ms).
 *
 * @example
 * ```ts
 * import { DEFAULT_TTL_MS, InMemoryLock } from "gcp-pubsub-idempotency";
 *
 * // Suppress duplicates for a day instead of an hour.
 * const backend = new InMemoryLock({ ttlMs: 24 * DEFAULT_TTL_MS });
 * ```
 */
export const DEFAULT_TTL_MS = 60 * 60_000;
/**
 * The longest key every backend accepts, in UTF-8 bytes (1,024). A longer or empty key is
 * refused with {@link InvalidKey}.
 *
 * @example
 * ```ts
 * import { createHash } from "node:crypto";
 * import { MAX_KEY_BYTES } from "gcp-pubsub-idempotency";
 *
 * const raw = "orders:" + "x".repeat(2_000);
 * const key = Buffer.byteLength(raw) <= MAX_KEY_BYTES
 *   ? raw
 *   : `orders:sha256:${createHash("sha256").update(raw).digest("hex")}`;
 * ```
 */
export const MAX_KEY_BYTES = 1024;
/**
 * Default `heartbeat.maxHoldMs`: a heartbeat stops renewing after 60 minutes (in ms), so
 * a stuck body cannot hold a key forever.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_HOLD_MS, InMemoryLock, lock } from "gcp-pubsub-idempotency";
 *
 * const heartbeat = { maxHoldMs: 2 * DEFAULT_MAX_HOLD_MS };
 * await lock("exports:full", { backend: new InMemoryLock(), heartbeat }, async () => {});
 * ```
 */
export const DEFAULT_MAX_HOLD_MS = 60 * 60_000;
/**
 * The longest lease, wait or heartbeat interval any option accepts: 2^31 − 1 ms (about 24.8
 * days), the longest delay a Node.js timer keeps. A lease is a bound on one run of the
 * work; a run longer than days wants a heartbeat, not a longer lease.
 *
 * @example
 * ```ts
 * import { InMemoryLock, lock, MAX_LEASE_MS } from "gcp-pubsub-idempotency";
 *
 * const leaseMs = Math.min(7 * 24 * 60 * 60_000, MAX_LEASE_MS); // a week fits
 * await lock("reports:weekly", { backend: new InMemoryLock(), leaseMs }, async () => {});
 * ```
 */
export const MAX_LEASE_MS = 2 ** 31 - 1;
/**
 * The longest `ttlMs` any backend accepts: ten years (315,360,000,000 ms). Every store keeps
 * `now + lease + ttl` as an exact integer of epoch milliseconds well below this bound, so a
 * record it writes is a record it can read back.
 *
 * @example
 * ```ts
 * import { InMemoryLock, MAX_TTL_MS } from "gcp-pubsub-idempotency";
 *
 * const backend = new InMemoryLock({ ttlMs: MAX_TTL_MS }); // the longest duplicate window
 * ```
 */
export const MAX_TTL_MS = 10 * 365 * 24 * 60 * 60_000;
