// The lockInTransaction cases of the backend contract: the business write and DONE land
// together or not at all, on every backend that offers completeInTransaction; a backend
// without it is refused before any I/O.

import type { LockBackend, TransactionalLockBackend } from "../core/port.js";
import type { LogFields, Logger } from "../core/types.js";
import { lockInTransaction } from "../core/verbs/transaction.js";
import { expect } from "./expect.js";

/**
 * How the contract writes and reads a business row through a backend's transactions: the
 * `transactional` part of a {@link BackendContractTarget} whose backend offers
 * `completeInTransaction`. Rows live beside the records (one table, collection or kind for
 * the whole run is enough: every case uses fresh row ids).
 *
 * @example
 * ```ts
 * import pg from "pg";
 * import type { TransactionalContractTarget } from "gcp-pubsub-idempotency/testing";
 *
 * const pool = new pg.Pool();
 * await pool.query("CREATE TABLE IF NOT EXISTS contract_rows (id text PRIMARY KEY, value text)");
 * const rows: TransactionalContractTarget<pg.PoolClient> = {
 *   async insert(tx, id, value) {
 *     await tx.query("INSERT INTO contract_rows (id, value) VALUES ($1, $2)", [id, value]);
 *   },
 *   async read(id) {
 *     const { rows } = await pool.query("SELECT value FROM contract_rows WHERE id = $1", [id]);
 *     return rows[0]?.value;
 *   },
 * };
 * ```
 */
export interface TransactionalContractTarget<Tx> {
  /**
   * Insert row `id` holding `value` through `tx`. It must fail, at once or at commit, when
   * row `id` exists (a primary key, `create()`, `insert()`): the failed-commit case needs it.
   */
  insert(tx: Tx, id: string, value: string): Promise<void>;
  /** The committed value of row `id`, read outside any transaction; undefined when absent. */
  read(id: string): Promise<string | undefined>;
  /**
   * True when the store admits one writing transaction at a time (SQLite): no reclaim can
   * land while a body runs, so the case that reclaims during the body is skipped.
   */
  exclusive?: boolean;
}

/** What the contract suite shares with these cases; the lease is read when a case runs. */
export interface TransactionCaseContext {
  readonly freshKey: (label: string) => string;
  readonly leaseMs: () => number;
  readonly slack: () => number;
  readonly advance: (ms: number) => Promise<void>;
  readonly withBackend: (title: string, fn: (backend: LockBackend) => Promise<void>) => void;
  readonly describe: (name: string, body: () => void) => unknown;
}

/** A logger that keeps its error lines, for the fenced-out alert. */
function errorLines(): Logger & { errors: LogFields[] } {
  const errors: LogFields[] = [];
  return { errors, info() {}, warn() {}, error: (_message, fields) => errors.push(fields ?? {}) };
}

/**
 * `backend` as it is, except that each `completeInTransaction` is counted and may run
 * `before` first (the contract's way to reclaim a key just before a zombie's transaction).
 */
function watched<Tx>(
  backend: TransactionalLockBackend<Tx>,
  before?: () => Promise<void>,
): TransactionalLockBackend<Tx> & { opened: number } {
  const watching = {
    opened: 0,
    claim: backend.claim.bind(backend),
    complete: backend.complete.bind(backend),
    release: backend.release.bind(backend),
    completeInTransaction: async <T>(
      claim: Parameters<typeof backend.completeInTransaction>[0],
      body: (tx: Tx) => Promise<T>,
    ) => {
      watching.opened++;
      await before?.();
      return backend.completeInTransaction(claim, body);
    },
  };
  return watching;
}

function transactionalOf<Tx>(backend: LockBackend): TransactionalLockBackend<Tx> {
  const method = (backend as Partial<TransactionalLockBackend<Tx>>).completeInTransaction;
  if (typeof method !== "function") {
    throw new Error(
      "the target has a `transactional` adapter, but its backend has no completeInTransaction",
    );
  }
  return backend as TransactionalLockBackend<Tx>;
}

/** Register the lockInTransaction cases: the full set with an adapter, else the refusal. */
export function describeTransactionCases<Tx>(
  rows: TransactionalContractTarget<Tx> | undefined,
  context: TransactionCaseContext,
): void {
  const { freshKey, withBackend, describe } = context;
  const silent: Logger = { info() {}, warn() {}, error() {} };

  if (rows === undefined) {
    describe("lockInTransaction (a backend without transactions)", () => {
      withBackend("is refused with InvalidConfiguration before any I/O", async (b) => {
        if (
          typeof (b as Partial<TransactionalLockBackend<Tx>>).completeInTransaction === "function"
        ) {
          throw new Error(
            "this backend offers completeInTransaction: give the target a `transactional` " +
              "adapter (insert and read a business row) so the contract can check it",
          );
        }
        const key = freshKey("no-transactions");
        let ran = false;
        await expect(
          lockInTransaction(key, { backend: b as TransactionalLockBackend<Tx> }, () => {
            ran = true;
          }),
        ).rejects.toMatchObject({ code: "INVALID_CONFIGURATION" });
        expect(ran).toBe(false);
        // Nothing was claimed: the key is still free.
        expect((await b.claim(key, 60_000)).status).toBe("won");
      });
    });
    return;
  }

  describe("lockInTransaction (transactional backends)", () => {
    withBackend("commit: the body's write and DONE land together", async (b) => {
      const backend = transactionalOf<Tx>(b);
      const key = freshKey("tx-commit");
      const row = `${key}:row`;
      let fence = 0;
      const value = await lockInTransaction(key, { backend, logger: silent }, async (tx, claim) => {
        fence = claim.fencingId;
        await rows.insert(tx, row, `fence ${claim.fencingId}`);
        return "committed";
      });
      expect(value).toBe("committed");
      expect(await rows.read(row)).toBe(`fence ${fence}`);
      expect(await b.claim(key, 60_000)).toEqual({ status: "done" });
    });

    withBackend("a duplicate or a held key never opens a transaction", async (b) => {
      const backend = watched(transactionalOf<Tx>(b));
      const key = freshKey("tx-duplicate");
      await lockInTransaction(key, { backend, logger: silent }, (tx) =>
        rows.insert(tx, `${key}:row`, "once"),
      );
      expect(backend.opened).toBe(1);
      let ran = 0;
      const again = () =>
        lockInTransaction(key, { backend, logger: silent }, async (tx) => {
          ran++;
          await rows.insert(tx, `${key}:again`, "twice");
        });
      await expect(again()).rejects.toMatchObject({ code: "DUPLICATE", key });
      const held = freshKey("tx-held");
      const holder = await b.claim(held, 60_000);
      expect(holder.status).toBe("won");
      await expect(
        lockInTransaction(held, { backend, logger: silent }, () => {
          ran++;
        }),
      ).rejects.toMatchObject({ code: "IN_PROGRESS", key: held });
      expect(ran).toBe(0);
      expect(backend.opened).toBe(1);
      expect(await rows.read(`${key}:again`)).toBe(undefined);
    });

    withBackend("a body that throws lands neither, frees the key, and rethrows", async (b) => {
      const backend = transactionalOf<Tx>(b);
      const key = freshKey("tx-throw");
      const boom = new Error("the body failed after its write");
      let thrown: unknown;
      await lockInTransaction(key, { backend, logger: silent }, async (tx) => {
        await rows.insert(tx, `${key}:row`, "rolled back");
        throw boom;
      }).catch((error: unknown) => {
        thrown = error;
      });
      expect(thrown).toBe(boom);
      expect(await rows.read(`${key}:row`)).toBe(undefined);
      // Released, not left to lapse: the redelivery wins at once and its write lands.
      await lockInTransaction(key, { backend, logger: silent }, (tx) =>
        rows.insert(tx, `${key}:row`, "redelivered"),
      );
      expect(await rows.read(`${key}:row`)).toBe("redelivered");
    });

    withBackend(
      "a failed commit (the body's write breaks a constraint) lands neither and frees the key",
      async (b) => {
        const backend = transactionalOf<Tx>(b);
        const taken = freshKey("tx-taken");
        await lockInTransaction(taken, { backend, logger: silent }, (tx) =>
          rows.insert(tx, `${taken}:row`, "first"),
        );
        const key = freshKey("tx-conflict");
        let failed = false;
        await lockInTransaction(key, { backend, logger: silent }, async (tx) => {
          await rows.insert(tx, `${key}:row`, "lost with the commit");
          // Row ids are unique: this write fails now (SQL) or at commit (Firestore, Datastore).
          await rows.insert(tx, `${taken}:row`, "second");
        }).catch(() => {
          failed = true;
        });
        expect(failed).toBe(true);
        expect(await rows.read(`${taken}:row`)).toBe("first");
        expect(await rows.read(`${key}:row`)).toBe(undefined);
        await lockInTransaction(key, { backend, logger: silent }, (tx) =>
          rows.insert(tx, `${key}:row`, "redelivered"),
        );
        expect(await rows.read(`${key}:row`)).toBe("redelivered");
      },
    );

    withBackend(
      "a zombie reclaimed before its transaction opened lands neither; the reclaimer's write lands",
      async (b) => {
        const backend = transactionalOf<Tx>(b);
        const key = freshKey("tx-zombie");
        const logger = errorLines();
        // Between the zombie's claim and its transaction, its lease lapses and another
        // delivery reclaims the key and commits.
        const zombieBackend = watched(backend, async () => {
          await context.advance(context.leaseMs() + context.slack());
          await lockInTransaction(key, { backend, logger: silent }, (tx) =>
            rows.insert(tx, `${key}:reclaimer`, "counts"),
          );
        });
        const value = await lockInTransaction(
          key,
          { backend: zombieBackend, leaseMs: context.leaseMs(), logger },
          async (tx) => {
            await rows.insert(tx, `${key}:zombie`, "must not land");
            return "zombie";
          },
        );
        expect(value).toBe("zombie");
        expect(await rows.read(`${key}:zombie`)).toBe(undefined);
        expect(await rows.read(`${key}:reclaimer`)).toBe("counts");
        expect(logger.errors.some((f) => f.outcome === "fenced_out" && f.alert === true)).toBe(
          true,
        );
        expect(await b.claim(key, 60_000)).toEqual({ status: "done" });
      },
    );

    if (!rows.exclusive) {
      withBackend(
        "a zombie reclaimed while its body runs lands neither; the reclaimer's write lands",
        async (b) => {
          const backend = transactionalOf<Tx>(b);
          const key = freshKey("tx-zombie-open");
          const logger = errorLines();
          let reclaimed = false;
          const value = await lockInTransaction(
            key,
            { backend, leaseMs: context.leaseMs(), logger },
            async (tx) => {
              await rows.insert(tx, `${key}:zombie-early`, "must not land");
              // Firestore and Datastore may run the body again: reclaim only once.
              if (!reclaimed) {
                reclaimed = true;
                await context.advance(context.leaseMs() + context.slack());
                await lockInTransaction(key, { backend, logger: silent }, (reclaimer) =>
                  rows.insert(reclaimer, `${key}:reclaimer`, "counts"),
                );
              }
              await rows.insert(tx, `${key}:zombie-late`, "must not land");
              return "zombie";
            },
          );
          expect(value).toBe("zombie");
          expect(await rows.read(`${key}:zombie-early`)).toBe(undefined);
          expect(await rows.read(`${key}:zombie-late`)).toBe(undefined);
          expect(await rows.read(`${key}:reclaimer`)).toBe("counts");
          expect(logger.errors.some((f) => f.outcome === "fenced_out" && f.alert === true)).toBe(
            true,
          );
          expect(await b.claim(key, 60_000)).toEqual({ status: "done" });
        },
      );
    }

    withBackend("concurrent deliveries of one key: exactly one body's write lands", async (b) => {
      const backend = transactionalOf<Tx>(b);
      const key = freshKey("tx-race");
      const n = 8;
      const results = await Promise.allSettled(
        Array.from({ length: n }, (_, i) =>
          lockInTransaction(key, { backend, leaseMs: 60_000, logger: silent }, (tx) =>
            rows.insert(tx, `${key}:${i}`, "ran"),
          ),
        ),
      );
      const landed = [];
      for (let i = 0; i < n; i++) if ((await rows.read(`${key}:${i}`)) === "ran") landed.push(i);
      expect(landed).toHaveLength(1);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      for (const r of results) {
        if (r.status === "rejected") {
          expect(["IN_PROGRESS", "DUPLICATE"]).toContain((r.reason as { code?: unknown }).code);
        }
      }
    });
  });
}
