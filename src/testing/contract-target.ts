// What the contract suite needs to know about a backend under test.
import type { LockBackend } from "../core/port.js";
import type { TransactionalContractTarget } from "./contract-transactions.js";

/**
 * What the contract suite needs to know about a backend under test.
 *
 * @example
 * ```ts
 * import { InMemoryLock } from "gcp-pubsub-idempotency";
 * import { type BackendContractTarget, createFakeClock } from "gcp-pubsub-idempotency/testing";
 *
 * const clock = createFakeClock();
 * const target: BackendContractTarget = {
 *   name: "memory (fake clock)",
 *   create: ({ ttlMs }) => new InMemoryLock({ ttlMs, now: clock.now }),
 *   advance: clock.advance,
 * };
 * ```
 */
export interface BackendContractTarget<Tx = unknown> {
  /** Shown in the test names, e.g. "redis (ioredis)". */
  name: string;
  /**
   * A backend over an isolated store (its own prefix, table or namespace is best), with
   * the given ttl. Called once per test (and once for the warm-up); give `cleanup` to remove
   * what it made.
   */
  create(options: { ttlMs: number }): LockBackend | Promise<LockBackend>;
  /**
   * Remove what `create` made: its tables, collections, key prefixes or namespaces. Called
   * once, after the last case (in the runner's `afterAll`), every backend closed by then. The
   * suite cannot know what a `create` made, so without `cleanup` it all stays behind, a table
   * per case on SQL. Needs a runner with `afterAll` (vitest's, jest's, node:test's `after`).
   *
   * @example
   * ```ts
   * import { SqlLock } from "gcp-pubsub-idempotency/sql";
   * import type { BackendContractTarget } from "gcp-pubsub-idempotency/testing";
   * import pg from "pg";
   *
   * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
   * const tables: string[] = [];
   * const target: BackendContractTarget = {
   *   name: "SqlLock postgres",
   *   create: async ({ ttlMs }) => {
   *     const table = `contract_${Date.now().toString(36)}_${tables.length}`;
   *     tables.push(table);
   *     const backend = new SqlLock({ client: pool, table, ttlMs });
   *     await backend.ensureSchema();
   *     return backend;
   *   },
   *   cleanup: async () => {
   *     for (const table of tables.splice(0)) await pool.query(`DROP TABLE IF EXISTS ${table}`);
   *   },
   * };
   * ```
   */
  cleanup?(): void | Promise<void>;
  /**
   * Let `ms` of the backend's time pass. Default: a real sleep, for stores with their own
   * clock. InMemoryLock with a fake clock passes `clock.advance`.
   */
  advance?(ms: number): void | Promise<void>;
  /**
   * The backend's clock, epoch ms: the lease-end case compares a won claim's
   * `leaseExpiresAt` with it. Default: the `now` of the backend's `inspect()`, else
   * `Date.now()` around the claim. A target with `advance` and a backend without `inspect`
   * must pass it (InMemoryLock with a fake clock: `clock.now`), or that case is skipped.
   */
  now?(): number | Promise<number>;
  /**
   * A short lease for the timing cases; default 150 ms. Raised for a slow store: see
   * `latencyFactor`.
   */
  leaseMs?: number;
  /** A short ttl for the expiry cases; default 4 × leaseMs (raised with the lease). */
  ttlMs?: number;
  /**
   * Before the first case the suite warms the store up on a backend from `create` (see
   * {@link warmUpBackend}: no case pays for a cold connection or an emulator's first write)
   * and measures its slowest call. The short lease is then at least this many times that
   * call, and the ttl grows in proportion, so a busy machine's slow write never outlasts a
   * lease a case expects to hold. Default 10. 0 keeps `leaseMs` and `ttlMs` as given (the
   * warm-up still runs), as does a target with `advance`, whose clock stands still during a
   * call. The lease is never raised past 5 s (or `leaseMs`, if longer); each case has a
   * timeout of its own, long enough to wait out the ttl of the longest lease.
   */
  latencyFactor?: number;
  /** Claims started at once in the race case; default 32. */
  concurrency?: number;
  /** Skip the race case (a store whose claims are serialized anyway still passes it). */
  skipConcurrency?: boolean;
  /**
   * For a backend with `completeInTransaction` (a `TransactionalLockBackend`): how to write
   * and read a business row through its transactions, so the lockInTransaction cases run.
   * Without it the suite checks that lockInTransaction refuses the backend before any I/O,
   * and fails if the backend does offer transactions.
   */
  transactional?: TransactionalContractTarget<Tx>;
}
