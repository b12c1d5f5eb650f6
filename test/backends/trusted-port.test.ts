// Every built-in backend checks a key and a lease in its public methods, for a direct caller,
// and offers the engine a trusted port that runs the same code without those checks
// (src/core/trusted-port.ts). Here: the public methods still refuse; each built-in offers a
// port with exactly its port methods; and the port runs the same transitions as the public
// methods, on InMemoryLock, SQLite and Redis (the shared server, a private prefix).
import { randomBytes } from "node:crypto";
import Database from "better-sqlite3";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import { FirestoreLock } from "../../src/backends/firestore/index.js";
import { RedisLock } from "../../src/backends/redis/index.js";
import { BACKENDS } from "../../src/backends/registry.js";
import { SpannerLock } from "../../src/backends/spanner/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import type { Claim, LockBackend, TransactionalLockBackend } from "../../src/core/port.js";
import { trustedPort } from "../../src/core/trusted-port.js";
import { InMemoryLock } from "../../src/index.js";
import { won } from "../support/claims.js";
import { findOrStartRedis } from "../support/redis.js";
import { startOrSkip } from "../support/required.js";

const PORT_METHODS = ["claim", "complete", "release", "renew", "completeInTransaction"];

// Clients that are never used by the refusal cases: constructing them does no I/O.
const lazyRedis = new Redis({ lazyConnect: true });
const sqlite = new Database(":memory:");
afterAll(() => {
  lazyRedis.disconnect();
  sqlite.close();
});

/** One of each built-in backend, by class name; none is contacted by the refusal cases. */
const builtIns: Record<string, () => LockBackend> = {
  InMemoryLock: () => new InMemoryLock(),
  RedisLock: () => new RedisLock({ client: lazyRedis }),
  SqlLock: () => new SqlLock({ client: sqlite }),
  DatastoreLock: () => new DatastoreLock({ projectId: "trusted-port-test" }),
  FirestoreLock: () => new FirestoreLock({ projectId: "trusted-port-test" }),
  SpannerLock: () => new SpannerLock({ instanceId: "main", databaseId: "none" }),
};

const badClaim: Claim = { key: "", fencingId: 1, leaseExpiresAt: 0 };
const goodClaim: Claim = { key: "orders:1", fencingId: 1, leaseExpiresAt: 0 };
const refusedKey = { code: "INVALID_KEY" };
const refusedOption = { code: "INVALID_CONFIGURATION" };

describe("built-in backends: public methods check, the trusted port does not repeat it", () => {
  it("covers every backend of the registry", () => {
    expect(Object.keys(builtIns).sort()).toEqual(BACKENDS.map((b) => b.className).sort());
  });

  for (const [name, make] of Object.entries(builtIns)) {
    describe(name, () => {
      it("refuses a bad key or lease from a direct caller, before any I/O", async () => {
        const backend = make() as TransactionalLockBackend<unknown>;
        await expect(backend.claim("", 60_000)).rejects.toMatchObject(refusedKey);
        await expect(backend.claim("a\u0000b", 60_000)).rejects.toMatchObject(refusedKey);
        await expect(backend.claim("orders:1", 0)).rejects.toMatchObject(refusedOption);
        await expect(backend.claim("orders:1", 1.5)).rejects.toMatchObject(refusedOption);
        await expect(backend.complete(badClaim)).rejects.toMatchObject(refusedKey);
        await expect(backend.release(badClaim)).rejects.toMatchObject(refusedKey);
        if (backend.renew !== undefined) {
          await expect(backend.renew(badClaim, 60_000)).rejects.toMatchObject(refusedKey);
          await expect(backend.renew(goodClaim, -1)).rejects.toMatchObject(refusedOption);
        }
        if (backend.completeInTransaction !== undefined) {
          let ran = false;
          const body = async () => {
            ran = true;
          };
          await expect(backend.completeInTransaction(badClaim, body)).rejects.toMatchObject(
            refusedKey,
          );
          expect(ran).toBe(false);
        }
        await backend.close?.();
      });

      it("offers a trusted port with exactly its port methods", async () => {
        const backend = make();
        const port = trustedPort(backend);
        expect(port).not.toBe(backend);
        const has = (object: object) =>
          PORT_METHODS.filter(
            (method) => typeof (object as Record<string, unknown>)[method] === "function",
          );
        expect(has(port)).toEqual(has(backend));
        await backend.close?.();
      });
    });
  }
});

/**
 * The same script through `through` (the public methods, or the trusted port), on a fresh key
 * of `backend`: what each call answered, fences as offsets from the first.
 */
async function script(backend: LockBackend, through: LockBackend): Promise<unknown[]> {
  const key = `trusted:${randomBytes(6).toString("hex")}`;
  const seen: unknown[] = [];
  const first = won(await through.claim(key, 60_000));
  const fence = (claim: Claim) => claim.fencingId - first.fencingId;
  seen.push(["claim", "won"]);
  // Both paths share the record: the public method sees what the port wrote, and back.
  seen.push(["held elsewhere", (await backend.claim(key, 60_000)).status]);
  seen.push(["held", (await through.claim(key, 60_000)).status]);
  seen.push(["renew", await through.renew?.(first, 120_000)]);
  await through.release(first);
  const second = won(await through.claim(key, 60_000));
  seen.push(["reclaim after release", fence(second)]);
  seen.push(["complete, fenced out", await through.complete(first)]);
  seen.push(["renew, fenced out", await through.renew?.(first, 60_000)]);
  seen.push(["complete", await through.complete(second)]);
  seen.push(["claim after done", (await through.claim(key, 60_000)).status]);
  seen.push(["done elsewhere", (await backend.claim(key, 60_000)).status]);
  return seen;
}

function describeRoundTrip(name: string, make: () => Promise<LockBackend>) {
  it(`${name}: the trusted port runs the transitions the public methods run`, async () => {
    const backend = await make();
    const port = trustedPort(backend);
    expect(port).not.toBe(backend);
    const expected = [
      ["claim", "won"],
      ["held elsewhere", "held"],
      ["held", "held"],
      ["renew", true],
      ["reclaim after release", 2],
      ["complete, fenced out", false],
      ["renew, fenced out", false],
      ["complete", true],
      ["claim after done", "done"],
      ["done elsewhere", "done"],
    ];
    expect(await script(backend, backend)).toEqual(expected);
    expect(await script(backend, port)).toEqual(expected);
  });
}

describe("the trusted port's round trip", () => {
  describeRoundTrip("InMemoryLock", async () => new InMemoryLock());
  describeRoundTrip("SqlLock on SQLite", async () => {
    const backend = new SqlLock({ client: sqlite, table: "trusted_port" });
    await backend.ensureSchema();
    return backend;
  });
});

const redisServer = await startOrSkip("Redis", findOrStartRedis);

describe.skipIf(!redisServer)("the trusted port's round trip on Redis", () => {
  const client = new Redis(redisServer?.url ?? "redis://127.0.0.1:6379", { lazyConnect: true });
  beforeAll(() => client.connect());
  afterAll(async () => {
    client.disconnect();
    await redisServer?.stop();
  });
  // A private prefix, and a short ttl: the shared server forgets these records by itself.
  const prefix = `idem-test:${randomBytes(6).toString("hex")}:`;
  describeRoundTrip("RedisLock", async () => new RedisLock({ client, prefix, ttlMs: 60_000 }));
});
