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
