// Where a Google store keeps the record of a key: under an id spread over the key space
// (the default), under 0.1's plain id, or, while a store moves from one to the other, spread
// for new records with the plain id read as well. DECISIONS.md 19 says why and how to move.
import { createHash } from "node:crypto";
import { InvalidConfiguration } from "../../core/errors.js";
import { describe } from "../../core/validate.js";

/**
 * How a Google lock names its records (`recordIds`):
 * - `"spread"` (default): a 4-hex-digit hash of the key and `~` before the encoded key, so
 *   keys that rise (`orders:1041`, `orders:1042`, Pub/Sub message ids) land all over the key
 *   space instead of on one tablet.
 * - `"plain"`: the encoded key alone, as 0.1 wrote it; for a store 0.1 instances still use.
 * - `"migrating"`: new records spread; a key without one is looked up under its plain id as
 *   well, and a record found there is honoured (and moved to its spread id when written).
 *
 * @example
 * ```ts
 * import { DatastoreLock, type RecordIdLayout } from "gcp-pubsub-idempotency/datastore";
 *
 * // A kind 0.1 wrote: "plain" while 0.1 instances run, then "migrating" for one ttl.
 * const recordIds: RecordIdLayout = "migrating";
 * const backend = new DatastoreLock({ namespace: "orders-svc", recordIds });
 * ```
 */
export type RecordIdLayout = "spread" | "plain" | "migrating";

/** The values of the `recordIds` option, the default first. */
export const RECORD_ID_LAYOUTS: readonly RecordIdLayout[] = ["spread", "plain", "migrating"];

/** The ids a lock reads and writes for a key. */
export interface RecordIds {
  readonly layout: RecordIdLayout;
  /** The id of the key's record: where a new record goes. */
  home(key: string): string;
  /** The plain id read as well when `home` holds nothing (`"migrating"` only). */
  legacy(key: string): string | undefined;
}

/**
 * The spread prefix of `key`: the first 4 hex digits of the SHA-256 of its UTF-8 bytes, then
 * `~`. 65,536 prefixes: adjacent keys fall far apart, and a key always gets the same one.
 */
export function spreadPrefix(key: string): string {
  return `${createHash("sha256").update(key, "utf8").digest("hex").slice(0, 4)}~`;
}

/** Whether `id` is a spread id (the prefix of {@link spreadPrefix}). */
export function isSpreadId(id: string): boolean {
  return SPREAD_ID.test(id);
}

const SPREAD_ID = /^[0-9a-f]{4}~/;

/**
 * The ids of `layout`, for a store whose plain id of a key is `plain(key)` and whose spread id
 * is the spread prefix before `spread(key)`.
 */
export function recordIds(
  layout: RecordIdLayout,
  plain: (key: string) => string,
  spread: (key: string) => string,
): RecordIds {
  const spreadId = (key: string) => spreadPrefix(key) + spread(key);
  switch (layout) {
    case "plain":
      return { layout, home: plain, legacy: () => undefined };
    case "spread":
      return { layout, home: spreadId, legacy: () => undefined };
    case "migrating":
      return { layout, home: spreadId, legacy: plain };
  }
}

/** The `recordIds` option checked: one of {@link RECORD_ID_LAYOUTS}, default `"spread"`. */
export function recordIdsOption(value: unknown): RecordIdLayout {
  if (value === undefined) return "spread";
  if ((RECORD_ID_LAYOUTS as readonly unknown[]).includes(value)) return value as RecordIdLayout;
  throw new InvalidConfiguration(
    `recordIds must be "spread" (the default), "plain" (0.1's ids) or "migrating" (spread, ` +
      `reading 0.1's ids too; see DECISIONS.md 19), got ${describe(value)}`,
  );
}
