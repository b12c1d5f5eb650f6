/** Mutual-exclusion window while the work runs: 15 minutes. */
export const DEFAULT_LEASE_MS = 15 * 60_000;
/** How long a DONE key suppresses duplicates: 1 hour. */
export const DEFAULT_TTL_MS = 60 * 60_000;
/** The longest key every backend accepts, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 1024;
/** Default cap on how long a heartbeat keeps a claim alive: 60 minutes. */
export const DEFAULT_MAX_HOLD_MS = 60 * 60_000;
