// Which store a command works on, from its `--backend` URL (or the environment): a pure parse,
// checked once, before any driver is loaded. The stores are the registry's.
import { STORES, type StoreName } from "../../backends/registry.js";
import { type ParsedArgs, shown, UsageError } from "../args.js";

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

/** A store the CLI opens: a registry store. */
export type StoreKind = StoreName;

/** The spec of store `K`; `never` for a registry store without a spec here (a type error). */
export type SpecOf<K extends StoreName> = Extract<StoreSpec, { readonly kind: K }>;

export const BACKEND_ENV = "GCP_PUBSUB_IDEMPOTENCY_BACKEND";

/** Every store's URL form, as help and messages list them. */
const SCHEMES = `${STORES.slice(0, -1)
  .map((store) => store.url)
  .join(", ")} or ${STORES.at(-1)?.url}`;

/** The options of every command that opens a store, with what each applies to. */
export const STORE_OPTIONS = [
  {
    name: "--backend",
    value: "URL",
    help: `the store: ${SCHEMES} (default: $${BACKEND_ENV})`,
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
  {
    name: "--record-ids",
    value: "LAYOUT",
    help: "datastore, firestore, spanner: the lock's recordIds, spread (default), plain or migrating",
  },
] as const;

/** Which stores each store option applies to. */
const APPLIES_TO: Readonly<Record<string, readonly StoreName[]>> = {
  "--prefix": ["redis"],
  "--table": ["postgres", "mysql", "sqlite", "spanner"],
  "--kind": ["datastore"],
  "--project": ["datastore", "firestore"],
  "--database": ["datastore", "firestore"],
  "--record-ids": ["datastore", "firestore", "spanner"],
};

/** A Spanner database's resource name, the project optional (then ADC's). */
const SPANNER_PATH = /^(?:projects\/([^/]+)\/)?instances\/([^/]+)\/databases\/([^/]+)$/;

/** How each store's URL is read: the whole `text`, and the `rest` after its scheme's colon. */
const PARSERS: { readonly [K in StoreName]: (text: string, rest: string) => SpecOf<K> } = {
  redis(text) {
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
  },
  postgres(text) {
    networkUrl(text, "host");
    return { kind: "postgres", url: text };
  },
  mysql(text) {
    networkUrl(text);
    return { kind: "mysql", url: text };
  },
  sqlite(_, rest) {
    if (rest === "") throw new UsageError("sqlite: needs a path, e.g. sqlite:./records.db");
    return { kind: "sqlite", path: rest };
  },
  datastore: (_, rest) => ({ kind: "datastore", namespace: rest === "" ? undefined : rest }),
  firestore: (_, rest) => ({ kind: "firestore", collection: rest === "" ? undefined : rest }),
  spanner(_, rest) {
    const path = SPANNER_PATH.exec(rest);
    if (path === null) {
      throw new UsageError(
        `spanner: needs a database, e.g. spanner:projects/my-project/instances/main/databases/orders, got ${shown(rest)}`,
      );
    }
    return { kind: "spanner", projectId: path[1], instanceId: path[2]!, databaseId: path[3]! };
  },
};

/**
 * Which store a backend URL names. Refuses (UsageError) a scheme we do not ship, a URL that does
 * not parse, a network URL without a host, a Redis URL with a path other than a database number
 * or with a query, and an empty SQLite path. The names inside (namespace, collection, table) are
 * checked by the backend's own constructor, when the store is opened.
 */
export function parseStoreUrl(text: string): StoreSpec {
  const colon = text.indexOf(":");
  const scheme = colon === -1 ? "" : text.slice(0, colon).toLowerCase();
  const store = STORES.find((entry) => entry.schemes.includes(scheme));
  if (store === undefined) {
    throw new UsageError(`unsupported backend URL ${shown(redact(text))}: use ${SCHEMES}`);
  }
  return PARSERS[store.name](text, text.slice(colon + 1));
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
