// Every built-in backend, as data: its class, the package entry that exports it, the stores the
// CLI opens it on, its drivers and its optional port methods. The one list that code, messages
// and tests read, so none of them can forget a backend; it imports nothing, no driver above all.
// test/backends/registry.test.ts holds it to the classes, package.json and the docs.

/** An optional method of the port (LockBackend, TransactionalLockBackend). */
export type OptionalMethod =
  | "renew"
  | "purgeExpired"
  | "close"
  | "inspect"
  | "forceRelease"
  | "completeInTransaction";

/** A store the CLI opens a backend on, named by a `--backend` URL. */
export interface StoreEntry {
  /** The store's name, as the CLI says it (`postgres`, `datastore`). */
  readonly name: string;
  /** The URL schemes that name it, lower case. */
  readonly schemes: readonly string[];
  /** How its URL looks, for the help (`sqlite:PATH`). */
  readonly url: string;
}

/** One built-in backend. */
export interface BackendEntry {
  /** The exported class. */
  readonly className: string;
  /** The package entry that exports it: `.` (the core) or a subpath (`./redis`). */
  readonly entry: string;
  /** The stores the CLI opens it on (none for InMemoryLock). */
  readonly stores: readonly StoreEntry[];
  /** The driver packages it works with, each an optional peer dependency; any one will do. */
  readonly drivers: readonly string[];
  /** The optional port methods it has; it lacks every other one. */
  readonly methods: readonly OptionalMethod[];
  /** How it is built with a ttl, for the refusal of a ttl given to a verb or surface. */
  readonly withTtl: string;
}

const EVERY_METHOD = [
  "renew",
  "purgeExpired",
  "close",
  "inspect",
  "forceRelease",
  "completeInTransaction",
] as const satisfies readonly OptionalMethod[];

/** The built-in backends: the core's first, then in the order the CLI lists their stores. */
export const BACKENDS = [
  {
    className: "InMemoryLock",
    withTtl: "new InMemoryLock({ ttlMs })",
    entry: ".",
    stores: [],
    drivers: [],
    methods: ["renew", "purgeExpired", "close", "inspect", "forceRelease"],
  },
  {
    className: "RedisLock",
    withTtl: "new RedisLock({ client, ttlMs })",
    entry: "./redis",
    stores: [{ name: "redis", schemes: ["redis", "rediss"], url: "redis://, rediss://" }],
    drivers: ["ioredis", "redis", "@redis/client", "@valkey/valkey-glide"],
    // Redis expires each record itself (PEXPIREAT), and the client is the caller's to close.
    methods: ["renew", "inspect", "forceRelease"],
  },
  {
    className: "SqlLock",
    withTtl: "new SqlLock({ client, ttlMs })",
    entry: "./sql",
    stores: [
      { name: "postgres", schemes: ["postgres", "postgresql"], url: "postgres://" },
      { name: "mysql", schemes: ["mysql"], url: "mysql://" },
      { name: "sqlite", schemes: ["sqlite"], url: "sqlite:PATH" },
    ],
    drivers: ["pg", "mysql2", "better-sqlite3"],
    methods: EVERY_METHOD,
  },
  {
    className: "DatastoreLock",
    withTtl: "new DatastoreLock({ ttlMs })",
    entry: "./datastore",
    stores: [{ name: "datastore", schemes: ["datastore"], url: "datastore:[NAMESPACE]" }],
    drivers: ["@google-cloud/datastore"],
    methods: EVERY_METHOD,
  },
  {
    className: "FirestoreLock",
    withTtl: "new FirestoreLock({ ttlMs })",
    entry: "./firestore",
    stores: [{ name: "firestore", schemes: ["firestore"], url: "firestore:[COLLECTION]" }],
    drivers: ["@google-cloud/firestore"],
    methods: EVERY_METHOD,
  },
  {
    className: "SpannerLock",
    withTtl: "new SpannerLock({ database, ttlMs })",
    entry: "./spanner",
    stores: [
      {
        name: "spanner",
        schemes: ["spanner"],
        url: "spanner:[projects/P/]instances/I/databases/D",
      },
    ],
    drivers: ["@google-cloud/spanner"],
    methods: EVERY_METHOD,
  },
] as const satisfies readonly BackendEntry[];

/** The name of a store the CLI opens: `redis`, `postgres`, … `spanner`. */
export type StoreName = (typeof BACKENDS)[number]["stores"][number]["name"];

/** A store the CLI opens, its name one of {@link StoreName}. */
export type BuiltInStore = StoreEntry & { readonly name: StoreName };

/** Every store the CLI opens, in the registry's order. */
export const STORES: readonly BuiltInStore[] = BACKENDS.flatMap<BuiltInStore>(
  (backend) => backend.stores,
);

/**
 * The class names of the built-in backends that have `method`, for a message: with
 * `"completeInTransaction"`, "SqlLock, DatastoreLock, FirestoreLock, SpannerLock".
 */
export function backendsWith(method: OptionalMethod): string[] {
  return BACKENDS.filter((backend) =>
    (backend.methods as readonly OptionalMethod[]).includes(method),
  ).map((backend) => backend.className);
}

/** How the backend named `className` is built with a ttl; undefined for one not built in. */
export function withTtl(className: string): string | undefined {
  return BACKENDS.find((backend) => backend.className === className)?.withTtl;
}
