// The backend a command works on, from a URL: which store (a pure parse, checked once), and
// then the store itself, with its driver loaded only when that store is named.
import { importPeer, isMissingPackage, missingPeerText } from "../../core/peer.js";
import type { LockBackend } from "../../core/types.js";
import { type ParsedArgs, shown, UsageError } from "../args.js";
import { shownKey } from "../output.js";

/** A store named by a backend URL, before anything is opened. */
export type StoreSpec =
  | { readonly kind: "redis"; readonly url: string }
  | { readonly kind: "postgres"; readonly url: string }
  | { readonly kind: "mysql"; readonly url: string }
  | { readonly kind: "sqlite"; readonly path: string }
  | { readonly kind: "datastore"; readonly namespace: string | undefined }
  | { readonly kind: "firestore"; readonly collection: string | undefined }
  | {
      readonly kind: "spanner";
      readonly projectId: string | undefined;
      readonly instanceId: string;
      readonly databaseId: string;
    };

export type StoreKind = StoreSpec["kind"];

/** The options of every command that opens a store, with what each applies to. */
export const STORE_OPTIONS = [
  {
    name: "--backend",
    value: "URL",
    help: "the store: redis://, rediss://, postgres://, mysql://, sqlite:PATH, datastore:[NAMESPACE], firestore:[COLLECTION] or spanner:[projects/P/]instances/I/databases/D (default: $GCP_PUBSUB_IDEMPOTENCY_BACKEND)",
  },
  { name: "--prefix", value: "PREFIX", help: 'redis: the key prefix (default "idem:")' },
  {
    name: "--table",
    value: "TABLE",
    help: "sql, spanner: the table (default idempotency_records)",
  },
  { name: "--kind", value: "KIND", help: "datastore: the kind (default IdempotencyRecord)" },
  { name: "--project", value: "ID", help: "datastore, firestore: the project (default: ADC's)" },
  {
    name: "--database",
    value: "ID",
    help: "datastore, firestore: the database (default (default))",
  },
] as const;

/** Which stores each store option applies to. */
const APPLIES_TO: Readonly<Record<string, readonly StoreKind[]>> = {
  "--prefix": ["redis"],
  "--table": ["postgres", "mysql", "sqlite", "spanner"],
  "--kind": ["datastore"],
  "--project": ["datastore", "firestore"],
  "--database": ["datastore", "firestore"],
};

export const BACKEND_ENV = "GCP_PUBSUB_IDEMPOTENCY_BACKEND";

const SCHEMES =
  "redis://, rediss://, postgres://, mysql://, sqlite:PATH, datastore:[NAMESPACE], firestore:[COLLECTION] or spanner:[projects/P/]instances/I/databases/D";

/** A Spanner database's resource name, the project optional (then ADC's). */
const SPANNER_PATH = /^(?:projects\/([^/]+)\/)?instances\/([^/]+)\/databases\/([^/]+)$/;

/**
 * Which store a backend URL names. Refuses (UsageError) a scheme we do not ship, a URL that does
 * not parse, a network URL without a host, a Redis URL with a path other than a database number
 * or with a query, and an empty SQLite path. The names inside (namespace, collection, table) are
 * checked by the backend's own constructor, when the store is opened.
 */
export function parseStoreUrl(text: string): StoreSpec {
  const colon = text.indexOf(":");
  const scheme = colon === -1 ? "" : text.slice(0, colon).toLowerCase();
  const rest = text.slice(colon + 1);
  switch (scheme) {
    case "sqlite":
      if (rest === "") throw new UsageError("sqlite: needs a path, e.g. sqlite:./records.db");
      return { kind: "sqlite", path: rest };
    case "datastore":
      return { kind: "datastore", namespace: rest === "" ? undefined : rest };
    case "firestore":
      return { kind: "firestore", collection: rest === "" ? undefined : rest };
    case "spanner": {
      const path = SPANNER_PATH.exec(rest);
      if (path === null) {
        throw new UsageError(
          `spanner: needs a database, e.g. spanner:projects/my-project/instances/main/databases/orders, got ${shown(rest)}`,
        );
      }
      return { kind: "spanner", projectId: path[1], instanceId: path[2]!, databaseId: path[3]! };
    }
    case "redis":
    case "rediss": {
      const url = networkUrl(text);
      if (!/^\/?(?:\d{1,5})?$/.test(url.pathname)) {
        throw new UsageError(
          `a Redis URL's path can only be a database number, got ${shown(url.pathname)}`,
        );
      }
      if (url.search !== "" || url.hash !== "") {
        throw new UsageError("a Redis URL takes no query or fragment");
      }
      return { kind: "redis", url: text };
    }
    case "postgres":
    case "postgresql":
      networkUrl(text, "host");
      return { kind: "postgres", url: text };
    case "mysql":
      networkUrl(text);
      return { kind: "mysql", url: text };
    default:
      throw new UsageError(`unsupported backend URL ${shown(redact(text))}: use ${SCHEMES}`);
  }
}

/** A URL with a host (or, when `hostParameter` is named, that query parameter instead). */
function networkUrl(text: string, hostParameter?: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`the backend URL ${shown(redact(text))} does not parse`);
  }
  if (url.hostname === "" && !(hostParameter && url.searchParams.has(hostParameter))) {
    throw new UsageError(`the backend URL ${shown(redact(text))} has no host`);
  }
  return url;
}

/** A URL as messages may show it: any password replaced by `***`. */
export function redact(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@]*?:)[^/@]*@/i, "$1***@");
}

/** The store spec of a command line: `--backend` or the environment, and its options checked. */
export function storeSpecOf(
  args: ParsedArgs,
  env: Readonly<Record<string, string | undefined>>,
): StoreSpec {
  const given = args.options.get("--backend");
  const text = typeof given === "string" ? given : env[BACKEND_ENV];
  if (text === undefined || text === "") {
    throw new UsageError(`no backend: pass --backend URL or set ${BACKEND_ENV} (${SCHEMES})`);
  }
  const spec = parseStoreUrl(text);
  for (const [name, kinds] of Object.entries(APPLIES_TO)) {
    if (args.options.has(name) && !kinds.includes(spec.kind)) {
      throw new UsageError(
        `${name} applies to ${kinds.join(", ")} backends only, not ${spec.kind}`,
      );
    }
  }
  return spec;
}

/**
 * What a command read: the store, where it is, and the prefix, table, kind or collection the
 * records are under; `--json` writes it as the `read` field.
 */
export interface StoreReads {
  readonly store: StoreKind;
  /** host:port (and database), a file, or a Spanner database; absent for Datastore and Firestore. */
  readonly at?: string;
  readonly project?: string;
  readonly database?: string;
  readonly prefix?: string;
  readonly table?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly collection?: string;
}

/** `redis 127.0.0.1:6379, prefix idem:`: what was read, as the first line of the text output. */
export function readsText(reads: StoreReads): string {
  const parts: string[] = [];
  const put = (label: string, value: string | undefined) => {
    if (value !== undefined) parts.push(`${label} ${shownKey(value)}`);
  };
  put("prefix", reads.prefix);
  put("table", reads.table);
  put("kind", reads.kind);
  put("namespace", reads.namespace);
  put("collection", reads.collection);
  put("project", reads.project);
  put("database", reads.database);
  const head = reads.at === undefined ? reads.store : `${reads.store} ${reads.at}`;
  return [head, ...parts].join(", ");
}

/** An open store: the backend, what it reads, and how to let go of it. */
export interface OpenStore {
  readonly backend: LockBackend;
  readonly reads: StoreReads;
  /** {@link readsText} of `reads`: `redis 127.0.0.1:6379, prefix idem:`. */
  readonly description: string;
  close(): Promise<void>;
}

function opened(backend: LockBackend, reads: StoreReads, close: () => Promise<void>): OpenStore {
  return { backend, reads, description: readsText(reads), close };
}

/** What the commands pass on to the backend's constructor. */
export interface StoreSettings {
  readonly ttlMs?: number;
}

/**
 * Open the store `spec` names: load its driver, connect (failing fast, without retries), and
 * build the backend with the command line's options. A missing driver is a plain Error saying
 * which package to install.
 */
export async function openStore(
  spec: StoreSpec,
  args: ParsedArgs,
  settings: StoreSettings = {},
): Promise<OpenStore> {
  const option = (name: string): string | undefined => {
    const value = args.options.get(name);
    return typeof value === "string" ? value : undefined;
  };
  const ttl = settings.ttlMs === undefined ? {} : { ttlMs: settings.ttlMs };
  switch (spec.kind) {
    case "redis":
      return openRedis(spec.url, option("--prefix"), ttl);
    case "postgres":
    case "mysql":
    case "sqlite":
      return openSql(spec, option("--table"), ttl);
    case "datastore": {
      const { DatastoreLock } = await import("../../backends/datastore/index.js");
      const backend = new DatastoreLock({
        ...defined({ namespace: spec.namespace, kind: option("--kind") }),
        ...googleSettings(option),
        ...ttl,
      });
      return opened(
        backend,
        {
          store: "datastore",
          kind: backend.kind,
          namespace: spec.namespace ?? "(default)",
          ...googleSettingsShown(option),
        },
        () => backend.close(),
      );
    }
    case "firestore": {
      const { FirestoreLock } = await import("../../backends/firestore/index.js");
      const backend = new FirestoreLock({
        ...defined({ collection: spec.collection }),
        ...googleSettings(option),
        ...ttl,
      });
      return opened(
        backend,
        { store: "firestore", collection: backend.collection, ...googleSettingsShown(option) },
        () => backend.close(),
      );
    }
    case "spanner": {
      const { SpannerLock } = await import("../../backends/spanner/index.js");
      const { kind: _, ...ids } = spec;
      const backend = new SpannerLock({ ...defined({ ...ids, table: option("--table") }), ...ttl });
      const at = `${spec.projectId === undefined ? "" : `projects/${spec.projectId}/`}instances/${spec.instanceId}/databases/${spec.databaseId}`;
      return opened(backend, { store: "spanner", at, table: backend.table }, () => backend.close());
    }
  }
}

function googleSettings(option: (name: string) => string | undefined) {
  return defined({ projectId: option("--project"), databaseId: option("--database") });
}

/** The project and database given on the command line, for what a command read. */
function googleSettingsShown(option: (name: string) => string | undefined) {
  return defined({ project: option("--project"), database: option("--database") });
}

/** The entries whose value is defined (exactOptionalPropertyTypes: absent, not undefined). */
function defined<T extends Record<string, string | undefined>>(
  entries: T,
): Partial<Record<keyof T, string>> {
  const out: Partial<Record<keyof T, string>> = {};
  for (const [name, value] of Object.entries(entries)) {
    if (value !== undefined) out[name as keyof T] = value;
  }
  return out;
}

const CONNECT_TIMEOUT_MS = 5_000;

async function openRedis(
  url: string,
  prefix: string | undefined,
  ttl: { ttlMs?: number },
): Promise<OpenStore> {
  const { RedisLock } = await import("../../backends/redis/index.js");
  const where = new URL(url).host;
  const io = await loadDriver("redis", "ioredis", () => import("ioredis"), true);
  if (io !== undefined) {
    const client = new io.Redis(url, {
      lazyConnect: true,
      connectTimeout: CONNECT_TIMEOUT_MS,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    // Without a listener an unreachable server's 'error' event would end the process; its
    // error also says more than connect()'s own ("Connection is closed.").
    let lastError: unknown;
    client.on("error", (error) => {
      lastError = error;
    });
    await reach(
      `redis at ${where}`,
      () => client.connect(),
      () => lastError,
    );
    const backend = new RedisLock({ client, ...defined({ prefix }), ...ttl });
    return opened(backend, { store: "redis", at: where, prefix: backend.prefix }, async () => {
      client.disconnect();
    });
  }
  const nodeRedis = await loadDriver("redis", "redis", () => import("redis"), true);
  if (nodeRedis === undefined) {
    throw new Error(`${missingPeerText("the redis store", "ioredis")} (or npm install redis)`);
  }
  const client = nodeRedis.createClient({
    url,
    socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: false },
  });
  client.on("error", () => {});
  await reach(`redis at ${where}`, () => client.connect());
  const backend = new RedisLock({ client, ...defined({ prefix }), ...ttl });
  return opened(backend, { store: "redis", at: where, prefix: backend.prefix }, async () => {
    await client.close();
  });
}

async function openSql(
  spec: Extract<StoreSpec, { kind: "postgres" | "mysql" | "sqlite" }>,
  table: string | undefined,
  ttl: { ttlMs?: number },
): Promise<OpenStore> {
  const { SqlLock } = await import("../../backends/sql/index.js");
  const options = { ...defined({ table }), ...ttl };
  if (spec.kind === "postgres") {
    const pg = await loadDriver("postgres", "pg", () => import("pg"));
    const client = new pg.Client({
      connectionString: spec.url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    client.on("error", () => {});
    await reach("postgres", () => client.connect());
    const backend = new SqlLock({ client, dialect: "postgres", ...options });
    const at = `${client.host}:${client.port}/${client.database ?? ""}`;
    return opened(backend, { store: "postgres", at, table: backend.table }, () => client.end());
  }
  if (spec.kind === "mysql") {
    const mysql = await loadDriver("mysql", "mysql2/promise", () => import("mysql2/promise"));
    const connection = await reach("mysql", () =>
      mysql.createConnection({
        uri: spec.url,
        connectTimeout: CONNECT_TIMEOUT_MS,
        supportBigNumbers: true,
      }),
    );
    const backend = new SqlLock({ client: connection, dialect: "mysql", ...options });
    const url = new URL(spec.url);
    return opened(
      backend,
      { store: "mysql", at: `${url.host}${url.pathname}`, table: backend.table },
      () => connection.end(),
    );
  }
  const { default: Database } = await loadDriver(
    "sqlite",
    "better-sqlite3",
    () => import("better-sqlite3"),
  );
  // An operator's typo must not leave an empty database file behind.
  const db = await reach(
    `sqlite ${spec.path}`,
    async () => new Database(spec.path, { fileMustExist: true }),
  );
  const backend = new SqlLock({ client: db, dialect: "sqlite", ...options });
  return opened(backend, { store: "sqlite", at: spec.path, table: backend.table }, async () => {
    db.close();
  });
}

/** Connect, or fail with a message that names the store and why (the driver's own error). */
async function reach<T>(what: string, connect: () => Promise<T>, why?: () => unknown): Promise<T> {
  try {
    return await connect();
  } catch (error) {
    const cause = why?.() ?? error;
    const reason = cause instanceof Error ? cause.message || cause.name : String(cause);
    throw new Error(`cannot reach ${what}: ${reason}`, { cause });
  }
}

/**
 * A driver, loaded by `load` (a literal `import()` of `specifier`, so a bundler sees the name).
 * When its package is not installed: undefined if `optional`, else an error naming the store,
 * the package and `npm install`; a package that is there but fails to load is that error.
 */
async function loadDriver<M>(store: string, specifier: string, load: () => Promise<M>): Promise<M>;
async function loadDriver<M>(
  store: string,
  specifier: string,
  load: () => Promise<M>,
  optional: true,
): Promise<M | undefined>;
async function loadDriver<M>(
  store: string,
  specifier: string,
  load: () => Promise<M>,
  optional = false,
): Promise<M | undefined> {
  try {
    return await load();
  } catch (error) {
    if (optional && isMissingPackage(error, specifier)) return undefined;
    return importPeer(`the ${store} store`, specifier, () => Promise.reject(error));
  }
}
