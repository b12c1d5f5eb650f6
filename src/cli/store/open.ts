// Opening the store a command names: each registry store's opener loads its driver, connects
// (failing fast, without retries) and builds the backend with the command line's options.
import type { StoreName } from "../../backends/registry.js";
import type { ParsedArgs } from "../args.js";
import type { OptionText, Ttl } from "./connect.js";
import { openDatastore, openFirestore, openSpanner } from "./google.js";
import type { OpenStore } from "./reads.js";
import { openRedis } from "./redis.js";
import { openSql } from "./sql.js";
import type { SpecOf, StoreSpec } from "./url.js";

/** What the commands pass on to the backend's constructor. */
export interface StoreSettings {
  readonly ttlMs?: number;
}

/** How each store is opened; a registry store without one is a type error. */
const OPENERS: {
  readonly [K in StoreName]: (spec: SpecOf<K>, option: OptionText, ttl: Ttl) => Promise<OpenStore>;
} = {
  redis: (spec, option, ttl) => openRedis(spec.url, option("--prefix"), ttl),
  postgres: (spec, option, ttl) => openSql(spec, option("--table"), ttl),
  mysql: (spec, option, ttl) => openSql(spec, option("--table"), ttl),
  sqlite: (spec, option, ttl) => openSql(spec, option("--table"), ttl),
  datastore: openDatastore,
  firestore: openFirestore,
  spanner: openSpanner,
};

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
  const option: OptionText = (name) => {
    const value = args.options.get(name);
    return typeof value === "string" ? value : undefined;
  };
  const ttl = settings.ttlMs === undefined ? {} : { ttlMs: settings.ttlMs };
  const open = OPENERS[spec.kind] as (
    spec: StoreSpec,
    option: OptionText,
    ttl: Ttl,
  ) => Promise<OpenStore>;
  return open(spec, option, ttl);
}
