// Every backend constructor checks its options once, before any I/O: a value of the wrong
// type or out of range is an InvalidConfiguration naming the option (never a TypeError,
// never deferred to the first claim). Property-based over hostile values, with the
// reported cases pinned as examples. No store is contacted: clients are real but unused.
import { Datastore } from "@google-cloud/datastore";
import { Firestore } from "@google-cloud/firestore";
import Database from "better-sqlite3";
import fc from "fast-check";
import { Redis } from "ioredis";
import mysql from "mysql2/promise";
import pg from "pg";
import { createClient } from "redis";
import { afterAll, describe, expect, it } from "vitest";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import { FirestoreLock } from "../../src/backends/firestore/index.js";
import { RedisLock } from "../../src/backends/redis/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import { MAX_LEASE_MS, MAX_TTL_MS } from "../../src/core/constants.js";
import { InvalidConfiguration } from "../../src/core/errors.js";
import { describe as describeValue } from "../../src/core/validate.js";
import { InMemoryLock } from "../../src/index.js";

const SEED = Number(process.env.FC_SEED ?? 1313);
const RUNS = 150;

// Real clients that are never used: constructing them does no I/O.
const io = new Redis({ lazyConnect: true });
const nr = createClient();
const sqlite = new Database(":memory:");
const pgPool = new pg.Pool({ connectionString: "postgres://nobody@127.0.0.1:1/none" });
const myPool = mysql.createPool({ uri: "mysql://nobody@127.0.0.1:1/none" });
const datastore = new Datastore({ projectId: "options-test" });
const firestore = new Firestore({ projectId: "options-test" });

afterAll(async () => {
  io.disconnect();
  sqlite.close();
  await pgPool.end();
  await myPool.end();
  await firestore.terminate();
});

// --- hostile values ---------------------------------------------------------------------

const throwing = new Proxy(
  {},
  {
    get() {
      throw new TypeError("get trap");
    },
    has() {
      throw new TypeError("has trap");
    },
    ownKeys() {
      throw new TypeError("ownKeys trap");
    },
    getPrototypeOf() {
      throw new TypeError("getPrototypeOf trap");
    },
  },
);
const revocable = Proxy.revocable({}, {});
revocable.revoke();
const revoked = revocable.proxy;
// fast-check itself asks `in` of the values it hands out, so the proxies travel as tokens.
const THROWING = { proxy: "throwing" };
const REVOKED = { proxy: "revoked" };
const unbox = (value: unknown): unknown =>
  value === THROWING ? throwing : value === REVOKED ? revoked : value;

const specials: unknown[] = [
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  -1,
  0,
  -0,
  1.5,
  2 ** 31,
  2 ** 53,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  MAX_LEASE_MS,
  MAX_LEASE_MS + 1,
  MAX_TTL_MS,
  MAX_TTL_MS + 1,
  "",
  " ",
  "x",
  "1000",
  "\u0000",
  "\uD800",
  true,
  false,
  null,
  undefined,
  {},
  [],
  [1000],
  Object.create(null),
  Symbol("hostile"),
  () => 1000,
  10n,
  new Date(0),
  /re/,
  new Number(1000),
  new String("x"),
  THROWING,
  REVOKED,
];

const hostile: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...specials) },
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  fc.double(),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.boolean(),
  fc.anything({ maxDepth: 1 }),
);

// --- independent oracles (from the documented rules, not from the implementation) --------

const isWholeMs = (value: unknown, min: number, max: number) =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= min && value <= max;
const optional =
  (rule: (value: unknown) => boolean) =>
  (value: unknown): boolean =>
    value === undefined || rule(value);
const ttl = optional((v) => isWholeMs(v, 1, MAX_TTL_MS));
const str = (rule: (s: string) => boolean) => (value: unknown) =>
  typeof value === "string" && rule(value);
const wellFormed = (s: string) => {
  for (let i = 0; i < s.length; i++) {
    const unit = s.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return false;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) {
      return false;
    }
  }
  return true;
};
const reserved = (s: string) => s.length >= 4 && s.startsWith("__") && s.endsWith("__");
const storeName = (s: string) =>
  s.length > 0 &&
  !s.includes("\u0000") &&
  wellFormed(s) &&
  Buffer.byteLength(s) <= 1500 &&
  !reserved(s);
const projectId = str((s) => /^[\x21-\x7e]{1,100}$/.test(s));
const databaseId = str((s) => s === "(default)" || /^[a-z][a-z0-9-]{0,62}$/.test(s));
const isPlainObject = (value: unknown) =>
  typeof value === "object" && value !== null && value !== revoked && !Array.isArray(value);

interface OptionSpec {
  /** Whether the value is one the constructor must accept. */
  valid(value: unknown): boolean;
  /** Valid (or nearly valid) values, mixed into the hostile ones. */
  near?: fc.Arbitrary<unknown>;
  /** Whether a refusal must also render the value (scalar options). */
  showsValue?: boolean;
}

interface ConstructorSpec {
  name: string;
  build(options: unknown): unknown;
  /** Valid options the hostile value is merged into. */
  base: Record<string, unknown>;
  options: Record<string, OptionSpec>;
  /** Whether the options argument may be omitted. */
  optionalArgument: boolean;
}

const ttlSpec: OptionSpec = {
  valid: ttl,
  near: fc.oneof(
    fc.integer({ min: 1, max: MAX_TTL_MS }),
    fc.constantFrom(1, MAX_TTL_MS, MAX_TTL_MS + 1, 0, 60_000.5),
  ),
  showsValue: true,
};

const retryFields = ["attempts", "maxElapsedMs", "baseDelayMs", "maxDelayMs"] as const;
const retryFieldValid: Record<(typeof retryFields)[number], (value: unknown) => boolean> = {
  attempts: optional((v) => isWholeMs(v, 1, 100)),
  maxElapsedMs: optional((v) => isWholeMs(v, 0, MAX_LEASE_MS)),
  baseDelayMs: optional((v) => isWholeMs(v, 0, MAX_LEASE_MS)),
  maxDelayMs: optional((v) => isWholeMs(v, 0, MAX_LEASE_MS)),
};
const retrySpec: OptionSpec = {
  valid: optional(
    (v) =>
      isPlainObject(v) &&
      Object.keys(v as object).every((k) => (retryFields as readonly string[]).includes(k)) &&
      retryFields.every((f) => retryFieldValid[f]((v as Record<string, unknown>)[f])),
  ),
  near: fc.constantFrom({}, { attempts: 1 }, { attempts: 100, maxElapsedMs: 0 }, { attempts: 101 }),
};

const datastoreSpec: ConstructorSpec = {
  name: "DatastoreLock",
  build: (options) => new DatastoreLock(options as never),
  base: {},
  optionalArgument: true,
  options: {
    datastore: { valid: optional((v) => v === datastore), near: fc.constant(datastore) },
    projectId: {
      valid: optional(projectId),
      near: fc.constantFrom("my-project", "example.com:my-project", "my project", "x".repeat(101)),
      showsValue: true,
    },
    databaseId: {
      valid: optional(databaseId),
      near: fc.constantFrom("(default)", "orders", "Orders", "9db", "a".repeat(64)),
      showsValue: true,
    },
    namespace: {
      valid: optional(str((s) => /^[0-9A-Za-z._-]{1,100}$/.test(s) && !reserved(s))),
      near: fc.oneof(
        fc.stringMatching(/^[0-9A-Za-z._-]{0,101}$/),
        fc.constantFrom("__reserved__", "__", "orders-svc", ""),
      ),
      showsValue: true,
    },
    kind: {
      valid: optional(str(storeName)),
      near: fc.oneof(
        fc.string({ unit: "binary", minLength: 0, maxLength: 8 }),
        fc.constantFrom("__x__", "é".repeat(750), "é".repeat(751), "k\uD800", "a\u0000b"),
      ),
      showsValue: true,
    },
    ttlMs: ttlSpec,
    retry: retrySpec,
  },
};

const firestoreSpec: ConstructorSpec = {
  name: "FirestoreLock",
  build: (options) => new FirestoreLock(options as never),
  base: {},
  optionalArgument: true,
  options: {
    firestore: { valid: optional((v) => v === firestore), near: fc.constant(firestore) },
    projectId: datastoreSpec.options.projectId!,
    databaseId: datastoreSpec.options.databaseId!,
    collection: {
      valid: optional(str((s) => storeName(s) && !s.includes("/") && s !== "." && s !== "..")),
      near: fc.oneof(
        fc.string({ unit: "binary", minLength: 0, maxLength: 8 }),
        fc.constantFrom(".", "..", "a/b", "__x__", "é".repeat(750), "é".repeat(751), "k\uDC00"),
      ),
      showsValue: true,
    },
    ttlMs: ttlSpec,
    retry: retrySpec,
  },
};

const memorySpec: ConstructorSpec = {
  name: "InMemoryLock",
  build: (options) => new InMemoryLock(options as never),
  base: {},
  optionalArgument: true,
  options: {
    ttlMs: ttlSpec,
    now: { valid: optional((v) => typeof v === "function"), near: fc.constant(Date.now) },
  },
};

const prefixSpec: OptionSpec = {
  valid: optional(str((s) => /^[\x20-\x7e]{1,128}$/.test(s))),
  near: fc.oneof(
    fc.string({ unit: "binary-ascii", minLength: 0, maxLength: 130 }),
    fc.constantFrom("x".repeat(128), "x".repeat(129), "svc:", "é"),
  ),
  showsValue: true,
};

const redisSpecs: ConstructorSpec[] = [
  ["ioredis", io],
  ["node-redis", nr],
].map(([label, client]) => ({
  name: `RedisLock (${label as string})`,
  build: (options) => new RedisLock(options as never),
  base: { client },
  optionalArgument: false,
  options: {
    client: { valid: (v) => v === io || v === nr, near: fc.constantFrom(io, nr) },
    ttlMs: ttlSpec,
    prefix: prefixSpec,
  },
}));

const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;
/** `schema.table` on PostgreSQL, `database.table` on MySQL: one or two identifiers. */
const qualifiedTable = (s: string) => {
  const parts = s.split(".");
  return parts.length <= 2 && parts.every((p) => identifier.test(p));
};
const tableNear = fc.oneof(
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,48}$/),
  fc.constantFrom(
    "public.records",
    "app_db.records",
    "a.b.c",
    ".records",
    "app.",
    "1abc",
    "app.1abc",
    'x"; DROP TABLE y; --',
    "app.`x`; DROP TABLE y",
    "x".repeat(49),
  ),
  // Two parts, each an identifier or nearly one.
  fc
    .tuple(
      fc.stringMatching(/^[A-Za-z_`.][A-Za-z0-9_]{0,48}$/),
      fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,48}$/),
    )
    .map(([a, b]) => `${a}.${b}`),
);
const sqlSpecs: ConstructorSpec[] = [
  {
    name: "SqlLock (better-sqlite3)",
    client: sqlite as unknown,
    dialect: "sqlite",
    table: (s: string) => identifier.test(s),
  },
  {
    name: "SqlLock (pg Pool)",
    client: pgPool,
    dialect: "postgres",
    table: qualifiedTable,
  },
  {
    name: "SqlLock (mysql2 Pool)",
    client: myPool,
    dialect: "mysql",
    table: qualifiedTable,
  },
].map(({ name, client, dialect, table }) => ({
  name,
  build: (options) => new SqlLock(options as never),
  base: { client },
  optionalArgument: false,
  options: {
    client: { valid: (v) => v === client, near: fc.constant(client) },
    // A dialect is accepted only where the client has what it needs: a pg Pool has no
    // execute(), a mysql2 pool has query() too, so "postgres" fits it.
    dialect: {
      valid: optional((v) => v === dialect || (dialect === "mysql" && v === "postgres")),
      near: fc.constantFrom("postgres", "mysql", "sqlite", "oracle", "Postgres"),
      showsValue: true,
    },
    table: { valid: optional(str(table)), near: tableNear, showsValue: true },
    ttlMs: ttlSpec,
  },
}));

const specs: ConstructorSpec[] = [
  memorySpec,
  ...redisSpecs,
  ...sqlSpecs,
  datastoreSpec,
  firestoreSpec,
];

/** Build, and hold the outcome to the oracle: accepted iff valid; refused as configuration. */
function expectVerdict(spec: ConstructorSpec, option: string, value: unknown, valid: boolean) {
  let refusal: unknown;
  try {
    spec.build({ ...spec.base, [option]: value });
  } catch (error) {
    refusal = error;
  }
  const shown = describeValue(value);
  if (valid) {
    if (refusal !== undefined) {
      throw new Error(
        `${spec.name} refused a valid ${option} (${shown}): ${(refusal as Error).message}`,
      );
    }
    return;
  }
  if (!(refusal instanceof InvalidConfiguration)) {
    throw new Error(
      `${spec.name} ${option} = ${shown}: expected an InvalidConfiguration, got ` +
        (refusal === undefined
          ? "no error"
          : `${(refusal as Error).name}: ${(refusal as Error).message}`),
    );
  }
  expect(refusal.message).toContain(option);
  if (spec.options[option]!.showsValue) expect(refusal.message).toContain(shown);
}

describe.each(specs)("$name constructor", (spec) => {
  for (const [option, rule] of Object.entries(spec.options)) {
    it(`${option}: accepts exactly the valid values; refuses the rest, naming ${option}`, () => {
      const values = rule.near ? fc.oneof(hostile, rule.near) : hostile;
      fc.assert(
        fc.property(values, (boxed) => {
          const value = unbox(boxed);
          expectVerdict(spec, option, value, rule.valid(value));
        }),
        { seed: SEED, numRuns: RUNS },
      );
    });
  }

  it("the options argument itself: an object (or omitted where optional), else refused", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...specials.filter((v) => !isPlainObject(v) || v === throwing)),
        (value) => {
          let refusal: unknown;
          try {
            spec.build(value);
          } catch (error) {
            refusal = error;
          }
          if (value === undefined && spec.optionalArgument) {
            expect(refusal).toBeUndefined();
          } else {
            expect(refusal).toBeInstanceOf(InvalidConfiguration);
            expect((refusal as Error).message).toContain(spec.name.split(" ")[0]);
          }
        },
      ),
      { seed: SEED, numRuns: 60 },
    );
  });

  it("reads each known option exactly once, so a getter cannot change it after the check", () => {
    const reads = new Map<PropertyKey, number>();
    const options = new Proxy(
      { ...spec.base },
      {
        get(target, name, receiver) {
          reads.set(name, (reads.get(name) ?? 0) + 1);
          return Reflect.get(target, name, receiver);
        },
      },
    );
    spec.build(options);
    for (const option of Object.keys(spec.options)) expect(reads.get(option)).toBe(1);
  });

  it("an unknown option name is refused, naming it and the closest known one", () => {
    expect(() => spec.build({ ...spec.base, ttl: "not an option" })).toThrow(
      `\`ttl\` is not an option of ${spec.name.split(" ")[0]}; did you mean \`ttlMs\`?`,
    );
    expect(() => spec.build({ ...spec.base, leaseMs: 60_000 })).toThrow(
      `\`leaseMs\` is an option of lock() and the surfaces, not of ${spec.name.split(" ")[0]}: lock(key, { backend, leaseMs }, body)`,
    );
  });
});

describe.each([datastoreSpec, firestoreSpec])("$name retry", (spec) => {
  for (const field of retryFields) {
    it(`retry.${field}: accepts exactly the valid values; refuses the rest, naming retry.${field}`, () => {
      const near = fc.oneof(
        fc.integer({ min: -2, max: 102 }),
        fc.constantFrom(MAX_LEASE_MS, MAX_LEASE_MS + 1),
      );
      fc.assert(
        fc.property(fc.oneof(hostile, near), (boxed) => {
          const value = unbox(boxed);
          let refusal: unknown;
          try {
            spec.build({ retry: { [field]: value } });
          } catch (error) {
            refusal = error;
          }
          if (retryFieldValid[field](value)) {
            expect(refusal).toBeUndefined();
          } else {
            expect(refusal).toBeInstanceOf(InvalidConfiguration);
            expect((refusal as Error).message).toContain(`retry.${field}`);
            expect((refusal as Error).message).toContain(describeValue(value));
          }
        }),
        { seed: SEED, numRuns: RUNS },
      );
    });
  }
});

describe("the reported cases", () => {
  it("InMemoryLock({ now: 'x' }) is refused when constructed, not at the first claim", () => {
    expect(() => new InMemoryLock({ now: "x" as never })).toThrow(InvalidConfiguration);
    expect(() => new InMemoryLock({ now: "x" as never })).toThrow(
      /now must be a function, got "x"/,
    );
  });

  it("an InMemoryLock clock that answers no number refuses the claim instead of granting every one", async () => {
    const backend = new InMemoryLock({ now: () => Number.NaN });
    // With NaN for now, every lease compared as lapsed and every claim won.
    await expect(backend.claim("k", 60_000)).rejects.toThrow(
      /now\(\) must return epoch ms as a finite number, got number NaN/,
    );
    const text = new InMemoryLock({ now: (() => "12") as never });
    await expect(text.claim("k", 60_000)).rejects.toBeInstanceOf(InvalidConfiguration);
  });

  it("DatastoreLock({ namespace: 5 }) is refused", () => {
    expect(() => new DatastoreLock({ namespace: 5 as never })).toThrow(InvalidConfiguration);
    expect(() => new DatastoreLock({ namespace: 5 as never })).toThrow(
      /namespace must be .*got number 5/,
    );
  });

  it('DatastoreLock({ namespace: "" }) is refused, pointing at omitting it', () => {
    expect(() => new DatastoreLock({ namespace: "" })).toThrow(InvalidConfiguration);
    expect(() => new DatastoreLock({ namespace: "" })).toThrow(/omit it/);
    expect(new DatastoreLock({}).namespace).toBeUndefined();
    expect(new DatastoreLock({ namespace: "orders-svc" }).namespace).toBe("orders-svc");
  });

  it("DatastoreLock and FirestoreLock refuse retry: { attempts: NaN } (it retried for ever)", () => {
    for (const build of [
      () => new DatastoreLock({ retry: { attempts: Number.NaN } }),
      () => new FirestoreLock({ retry: { attempts: Number.NaN } }),
    ]) {
      expect(build).toThrow(InvalidConfiguration);
      expect(build).toThrow(/retry\.attempts must be a whole number from 1 to 100, got number NaN/);
    }
  });

  it("names of more than 1,500 UTF-8 bytes or with a lone surrogate are refused", () => {
    // 1,000 characters but 2,000 bytes: counted in characters, these used to pass.
    expect(() => new DatastoreLock({ kind: "é".repeat(1000) })).toThrow(/kind must be/);
    expect(() => new FirestoreLock({ collection: "é".repeat(1000) })).toThrow(/collection must be/);
    expect(() => new DatastoreLock({ kind: "k\uD800" })).toThrow(/kind must be/);
    expect(() => new DatastoreLock({ namespace: "__reserved__" })).toThrow(/namespace must be/);
  });

  it("client-like options of the wrong shape are refused, a throwing proxy included", () => {
    expect(() => new DatastoreLock({ datastore: {} as never })).toThrow(/datastore must be/);
    expect(() => new DatastoreLock({ datastore: throwing as never })).toThrow(/datastore must be/);
    expect(() => new FirestoreLock({ firestore: 5 as never })).toThrow(/firestore must be/);
    expect(() => new RedisLock({ client: throwing as never })).toThrow(/client must be/);
    expect(() => new SqlLock({ client: throwing as never })).toThrow(/client/);
    expect(() => new DatastoreLock({ retry: throwing as never })).toThrow(
      "the option names of DatastoreLock options.retry could not be read (its proxy threw)",
    );
  });
});
