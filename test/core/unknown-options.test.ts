// Issue 28: a misspelt option used to run silently with its default. Every options object we
// take refuses a name outside its documented set, with an InvalidConfiguration naming it.
import Database from "better-sqlite3";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import { FirestoreLock } from "../../src/backends/firestore/index.js";
import { RedisLock } from "../../src/backends/redis/index.js";
import { SpannerLock } from "../../src/backends/spanner/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import {
  createPushVerifier,
  InMemoryLock,
  InvalidConfiguration,
  idempotent,
  idempotentHttp,
  idempotentMessage,
  lock,
  lockInTransaction,
  mutex,
} from "../../src/index.js";

const SEED = Number(process.env.FC_SEED ?? 2828);
const db = new Database(":memory:");
afterAll(() => db.close());
const backend = new InMemoryLock();
const sql = new SqlLock({ client: db });
const body = async () => {};
/** Enough of a Redis client for the constructor's check (it does no I/O). */
const redisClient = { eval() {}, evalsha() {}, defineCommand() {}, status: "ready" };

// The documented option names (README / TSDoc), written out here, not read from the code.
const LOCK = ["backend", "leaseMs", "waitMs", "logger", "heartbeat", "telemetry"];
const GATEWAY = [...LOCK, "key", "onDuplicate", "allowUnguarded", "transaction"];
const owners: Record<
  string,
  { names: readonly string[]; build: (extra: Record<string, unknown>) => unknown }
> = {
  "lock()": { names: LOCK, build: (x) => lock("k", { backend, ...x } as never, body) },
  "mutex()": { names: LOCK, build: (x) => mutex("k", { backend, ...x } as never, body) },
  "lockInTransaction()": {
    names: LOCK,
    build: (x) => lockInTransaction("k", { backend: sql, ...x } as never, body),
  },
  idempotent: {
    names: [...GATEWAY, "requestTimeoutMs"],
    build: (x) => idempotent({ backend, ...x } as never, body),
  },
  idempotentHttp: {
    names: [...GATEWAY, "requestTimeoutMs", "maxBodyBytes", "auth"],
    build: (x) => idempotentHttp({ backend, ...x } as never, body),
  },
  idempotentMessage: {
    names: [...GATEWAY, "exactlyOnce"],
    build: (x) => idempotentMessage({ backend, ...x } as never, body),
  },
  "idempotentHttp options.auth": {
    names: ["audience", "serviceAccountEmail", "certificates"],
    build: (x) => idempotentHttp({ backend, auth: { audience: "https://x.test", ...x } }, body),
  },
  "createPushVerifier auth": {
    names: ["audience", "serviceAccountEmail", "certificates"],
    build: (x) => createPushVerifier({ audience: "https://x.test", ...x }),
  },
  "createPushVerifier context": {
    names: ["logger", "now", "certificatesUrl"],
    build: (x) => createPushVerifier({ audience: "https://x.test" }, x as never),
  },
  "lock options.telemetry": {
    names: ["tracerProvider", "meterProvider", "recordKey", "projectId"],
    build: (x) => lock("k", { backend, telemetry: x as never }, body),
  },
  heartbeat: {
    names: ["everyMs", "maxHoldMs"],
    build: (x) => lock("k", { backend, heartbeat: x as never }, body),
  },
  InMemoryLock: { names: ["ttlMs", "now"], build: (x) => new InMemoryLock(x as never) },
  RedisLock: {
    names: ["client", "ttlMs", "prefix"],
    build: (x) => new RedisLock({ client: redisClient, ...x } as never),
  },
  SqlLock: {
    names: ["client", "dialect", "table", "ttlMs"],
    build: (x) => new SqlLock({ client: db, ...x } as never),
  },
  DatastoreLock: {
    names: ["datastore", "projectId", "databaseId", "namespace", "kind", "ttlMs", "retry"],
    build: (x) => new DatastoreLock(x as never),
  },
  FirestoreLock: {
    names: ["firestore", "projectId", "databaseId", "collection", "ttlMs", "retry"],
    build: (x) => new FirestoreLock(x as never),
  },
  SpannerLock: {
    names: ["database", "projectId", "instanceId", "databaseId", "table", "ttlMs", "retry"],
    build: (x) =>
      new SpannerLock({
        projectId: "my-project",
        instanceId: "my-instance",
        databaseId: "orders",
        ...x,
      } as never),
  },
  "DatastoreLock options.retry": {
    names: ["attempts", "maxElapsedMs", "baseDelayMs", "maxDelayMs"],
    build: (x) => new DatastoreLock({ retry: x as never }),
  },
  "FirestoreLock options.retry": {
    names: ["attempts", "maxElapsedMs", "baseDelayMs", "maxDelayMs"],
    build: (x) => new FirestoreLock({ retry: x as never }),
  },
};

/** The refusal of building `owner` with `extra`, or undefined when it was accepted. */
async function refusal(owner: string, extra: Record<string, unknown>): Promise<unknown> {
  try {
    await owners[owner]!.build(extra);
    return undefined;
  } catch (error) {
    return error;
  }
}

/** How a refusal shows a key: in backticks when plain, else as a JSON string. */
const shown = (key: string) => (/^[\w$]{1,64}$/.test(key) ? `\`${key}\`` : JSON.stringify(key));

describe("every options object refuses a name outside its documented set", () => {
  const near = fc.constantFrom(
    "lease",
    "ttl",
    "ttlMs",
    "TTLMS",
    "leasems",
    "Backend",
    "timeout",
    "__proto__",
    "constructor",
    "toString",
    "hasOwnProperty",
    "",
    " leaseMs",
  );
  const key = fc.oneof(
    near,
    fc.string({ maxLength: 12 }),
    fc.string({ unit: "binary", maxLength: 30 }),
  );
  for (const [owner, { names }] of Object.entries(owners)) {
    it(`${owner}: any other key is an InvalidConfiguration naming it`, async () => {
      await fc.assert(
        fc.asyncProperty(
          key.filter((k) => !names.includes(k)),
          fc.anything(),
          async (k, value) => {
            const error = await refusal(owner, { [k]: value });
            expect(error).toBeInstanceOf(InvalidConfiguration);
            expect((error as Error).message).toContain(shown(k));
          },
        ),
        { seed: SEED, numRuns: 60 },
      );
    });
  }
  it("the documented names themselves are accepted (undefined is their default)", async () => {
    for (const [owner, { names }] of Object.entries(owners)) {
      const extra = Object.fromEntries(names.map((name) => [name, undefined]));
      if (owner === "SqlLock" || owner === "RedisLock") delete extra.client;
      if (owner === "idempotentHttp options.auth" || owner === "createPushVerifier auth") {
        delete extra.audience;
      }
      if (owner === "SpannerLock") {
        for (const name of ["projectId", "instanceId", "databaseId"]) delete extra[name];
      }
      delete extra.backend;
      // A later refusal (a held key, the table not yet made) is not about the options.
      const error = await refusal(owner, extra);
      expect(error instanceof InvalidConfiguration ? error.message : undefined, owner).toBe(
        undefined,
      );
    }
  });
});

describe("the refusal says what was meant", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      "idempotentHttp",
      { lease: 60_000 },
      "`lease` is not an option of idempotentHttp; did you mean `leaseMs`?",
    ],
    [
      "idempotentHttp",
      { timeout: 5 },
      "`timeout` is not an option of idempotentHttp; did you mean `requestTimeoutMs`?",
    ],
    [
      "idempotentHttp",
      { ttlMs: 60_000 },
      "`ttlMs` is an option of the backend, not of idempotentHttp: new InMemoryLock({ ttlMs })",
    ],
    [
      "idempotent",
      { ttl: 60_000 },
      "`ttl` is an option of the backend, not of idempotent: new InMemoryLock({ ttlMs })",
    ],
    [
      "idempotentMessage",
      { zzz: 1 },
      "`zzz` is not an option of idempotentMessage; known options: backend, leaseMs, waitMs, logger, heartbeat, telemetry, key, onDuplicate, allowUnguarded, transaction, fingerprint, steps, deadLetter, exactlyOnce",
    ],
    ["lock()", { lease: 1 }, "`lease` is not an option of lock; did you mean `leaseMs`?"],
    ["mutex()", { WaitMs: 1 }, "`WaitMs` is not an option of mutex; did you mean `waitMs`?"],
    [
      "lockInTransaction()",
      { ttlMs: 1 },
      "`ttlMs` is an option of the backend, not of lockInTransaction: new SqlLock({ client, ttlMs })",
    ],
    [
      "idempotentHttp options.auth",
      { audiance: "x" },
      "`audiance` is not an option of idempotentHttp options.auth; did you mean `audience`?",
    ],
    [
      "createPushVerifier context",
      { clock: () => 0 },
      "`clock` is not an option of createPushVerifier context; known options: logger, now, certificatesUrl",
    ],
    ["heartbeat", { every: 1 }, "`every` is not an option of heartbeat; did you mean `everyMs`?"],
    [
      "lock options.telemetry",
      { tracer: {} },
      "`tracer` is not an option of lock options.telemetry; did you mean `tracerProvider`?",
    ],
    [
      "RedisLock",
      { keyPrefix: "x" },
      "`keyPrefix` is not an option of RedisLock; did you mean `prefix`?",
    ],
    ["InMemoryLock", { ttl: 5 }, "`ttl` is not an option of InMemoryLock; did you mean `ttlMs`?"],
    [
      "InMemoryLock",
      { leaseMs: 5 },
      "`leaseMs` is an option of lock() and the surfaces, not of InMemoryLock: lock(key, { backend, leaseMs }, body)",
    ],
    [
      "DatastoreLock",
      { projectID: "p" },
      "`projectID` is not an option of DatastoreLock; did you mean `projectId`?",
    ],
    ["SqlLock", { tabel: "t" }, "`tabel` is not an option of SqlLock; did you mean `table`?"],
    [
      "SpannerLock",
      { instance: "i" },
      "`instance` is not an option of SpannerLock; did you mean `instanceId`?",
    ],
    [
      "DatastoreLock options.retry",
      { attempt: 3 },
      "`attempt` is not an option of DatastoreLock options.retry; did you mean `attempts`?",
    ],
  ];
  it.each(cases)("%s with %j", async (owner, extra, message) => {
    const error = await refusal(owner, extra);
    expect(error).toBeInstanceOf(InvalidConfiguration);
    expect((error as Error).message).toBe(message);
  });

  it("a ttl on a surface names the backend it was given", () => {
    const redis = new RedisLock({ client: redisClient as never });
    expect(() => idempotentHttp({ backend: redis, ttlMs: 60_000 } as never, body)).toThrow(
      "`ttlMs` is an option of the backend, not of idempotentHttp: new RedisLock({ client, ttlMs })",
    );
    expect(() => idempotentMessage({ backend: sql, ttlMs: 1 } as never, body)).toThrow(
      "`ttlMs` is an option of the backend, not of idempotentMessage: new SqlLock({ client, ttlMs })",
    );
  });

  it("an options object whose keys cannot be listed is refused as such", () => {
    const keyless = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error("trap");
        },
      },
    );
    expect(() => new InMemoryLock(keyless)).toThrow(
      "the option names of InMemoryLock could not be read (its proxy threw)",
    );
  });
});
