// lockInTransaction's own rules, on a small transactional store kept in this file: a
// committed map of business rows beside InMemoryLock, the body's writes staged per
// transaction. The real stores are checked by the contract (test/backends/*.contract.test.ts).
import { describe, expect, it } from "vitest";
import {
  type Claim,
  Duplicate,
  InMemoryLock,
  InProgress,
  InvalidConfiguration,
  type LockBackend,
  lockInTransaction,
  type TransactionalLockBackend,
  type TransactionCompletion,
} from "../../src/index.js";
import { createFakeClock } from "../../src/testing/index.js";
import { captureLogger } from "../support/logger.js";

const LEASE = 1_000;

/** Business rows staged by one transaction, applied only when DONE commits with them. */
type Staged = Map<string, string>;

interface StagedStore extends TransactionalLockBackend<Staged> {
  rows: Map<string, string>;
  transactions: number;
  /** The next commit fails with this error (after the body ran, before anything lands). */
  failNextCommit?: Error | undefined;
  calls: string[];
}

function stagedStore(lock: InMemoryLock): StagedStore {
  const store: StagedStore = {
    rows: new Map(),
    transactions: 0,
    calls: [],
    claim: (key, leaseMs) => {
      store.calls.push("claim");
      return lock.claim(key, leaseMs);
    },
    complete: (claim) => lock.complete(claim),
    release: (claim) => {
      store.calls.push("release");
      return lock.release(claim);
    },
    renew: (claim, leaseMs) => lock.renew(claim, leaseMs),
    async completeInTransaction<T>(
      claim: Claim,
      body: (tx: Staged) => Promise<T>,
    ): Promise<TransactionCompletion<T>> {
      store.transactions++;
      const staged: Staged = new Map();
      const value = await body(staged);
      const failure = store.failNextCommit;
      if (failure) {
        store.failNextCommit = undefined;
        throw failure;
      }
      // InMemoryLock answers synchronously inside: the complete and the apply are one step.
      const completed = await lock.complete(claim);
      if (completed) for (const [id, v] of staged) store.rows.set(id, v);
      return { completed, value };
    },
  };
  return store;
}

function setup() {
  const clock = createFakeClock();
  const lock = new InMemoryLock({ ttlMs: 60_000, now: clock.now });
  const backend = stagedStore(lock);
  const logger = captureLogger();
  return { clock, lock, backend, logger, options: { backend, leaseMs: LEASE, logger } };
}

describe("lockInTransaction", () => {
  it("commits the body's writes with DONE and resolves with its value", async () => {
    const { backend, options } = setup();
    const value = await lockInTransaction("m-1", options, async (tx, claim) => {
      tx.set("order-1", `fence ${claim.fencingId}`);
      return "sent";
    });
    expect(value).toBe("sent");
    expect(backend.rows.get("order-1")).toBe("fence 1");
    expect(await backend.claim("m-1", LEASE)).toEqual({ status: "done" });
  });

  it("answers a duplicate and a held key as lock() does, without opening a transaction", async () => {
    const { backend, options } = setup();
    await lockInTransaction("m-2", options, async () => {});
    const opened = backend.transactions;
    await expect(lockInTransaction("m-2", options, async () => {})).rejects.toBeInstanceOf(
      Duplicate,
    );
    await backend.claim("m-3", 60_000);
    const held = lockInTransaction("m-3", options, async () => {});
    await expect(held).rejects.toBeInstanceOf(InProgress);
    await expect(held).rejects.toMatchObject({ key: "m-3" });
    expect(backend.transactions).toBe(opened);
  });

  it("a body that throws lands nothing, releases the key and rethrows its own error", async () => {
    const { backend, options } = setup();
    const boom = new Error("payment refused");
    const run = lockInTransaction("m-4", options, async (tx) => {
      tx.set("order-4", "half");
      throw boom;
    });
    await expect(run).rejects.toBe(boom);
    expect(backend.rows.has("order-4")).toBe(false);
    expect(backend.calls.at(-1)).toBe("release");
    // Freed at once: the redelivery wins without waiting out the lease.
    expect(await backend.claim("m-4", LEASE)).toMatchObject({
      status: "won",
      claim: { fencingId: 3 },
    });
  });

  it("a failed commit lands nothing, releases the key and rejects", async () => {
    const { backend, options } = setup();
    const lost = new Error("connection lost at commit");
    backend.failNextCommit = lost;
    await expect(
      lockInTransaction("m-5", options, async (tx) => {
        tx.set("order-5", "x");
      }),
    ).rejects.toBe(lost);
    expect(backend.rows.has("order-5")).toBe(false);
    expect(backend.calls.at(-1)).toBe("release");
    // The redelivery runs the body once more, and this time it lands.
    await lockInTransaction("m-5", options, async (tx) => {
      tx.set("order-5", "y");
    });
    expect(backend.rows.get("order-5")).toBe("y");
  });

  it("a fenced-out zombie lands nothing, logs an alert and resolves; the reclaimer's writes land", async () => {
    const { backend, clock, logger, options } = setup();
    const zombie = lockInTransaction("m-6", options, async (tx) => {
      tx.set("order-6-zombie", "late");
      // The body outlives its lease; another delivery reclaims and commits meanwhile.
      clock.advance(LEASE + 1);
      await lockInTransaction("m-6", options, async (reclaimer) => {
        reclaimer.set("order-6", "on time");
      });
      return "zombie's value";
    });
    await expect(zombie).resolves.toBe("zombie's value");
    expect(backend.rows.get("order-6")).toBe("on time");
    expect(backend.rows.has("order-6-zombie")).toBe(false);
    const [alert] = logger.at("ERROR");
    expect(alert?.fields).toMatchObject({
      key: "m-6",
      fencingId: 1,
      outcome: "fenced_out",
      alert: true,
    });
    expect(backend.calls).not.toContain("release");
  });

  it("refuses a backend without transactions, naming it, before any I/O", async () => {
    const called: string[] = [];
    const memory = new InMemoryLock();
    const watched = new Proxy(memory, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== "function" || name === "constructor") return value;
        return (...args: unknown[]) => {
          called.push(String(name));
          return value.apply(target, args);
        };
      },
    });
    const run = lockInTransaction(
      "m-7",
      { backend: watched as unknown as TransactionalLockBackend<never> },
      async () => {},
    );
    await expect(run).rejects.toBeInstanceOf(InvalidConfiguration);
    await expect(run).rejects.toThrow(/InMemoryLock has none/);
    expect(called).toEqual([]);
    const plain: LockBackend = {
      claim: () => Promise.reject(new Error("no I/O expected")),
      complete: () => Promise.resolve(true),
      release: () => Promise.resolve(),
    };
    await expect(
      lockInTransaction(
        "m-7",
        { backend: plain as TransactionalLockBackend<never> },
        async () => {},
      ),
    ).rejects.toThrow(/this backend has none/);
  });

  it("refuses a bad key or body before any I/O", async () => {
    const { backend, options } = setup();
    await expect(lockInTransaction("", options, async () => {})).rejects.toMatchObject({
      code: "INVALID_KEY",
    });
    await expect(lockInTransaction("m-8", options, "body" as never)).rejects.toBeInstanceOf(
      InvalidConfiguration,
    );
    expect(backend.calls).toEqual([]);
  });

  it("renews the lease while the body runs, with heartbeat on", async () => {
    const { backend, logger } = setup();
    let renewals = 0;
    const renewing = {
      ...backend,
      renew: async (claim: Claim, leaseMs: number) => {
        renewals++;
        return backend.renew!(claim, leaseMs);
      },
    };
    await lockInTransaction(
      "m-9",
      // The body holds until two renewals came (a busy machine delays timers, so no fixed
      // sleep); the lease is ten renewal intervals, so a late timer does not lose it.
      { backend: renewing, leaseMs: 600, heartbeat: { everyMs: 60 }, logger },
      async (_tx, _claim, signal) => {
        const until = Date.now() + 10_000;
        while (renewals < 2 && Date.now() < until) {
          await new Promise((done) => setTimeout(done, 10));
        }
        expect(signal.aborted).toBe(false);
      },
    );
    expect(renewals).toBeGreaterThanOrEqual(2);
    expect(logger.at("ERROR")).toEqual([]);
  });
});
