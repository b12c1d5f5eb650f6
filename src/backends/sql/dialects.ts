// Which dialect a client speaks: the one named by the `dialect` option, or the one its shape
// says, checked against the methods that dialect calls.
import { InvalidConfiguration } from "../../core/errors.js";
import { describe } from "../../core/validate.js";
import { hasMethods } from "../shared/has-methods.js";
import type { Dialect } from "./dialect.js";
import { mysql } from "./mysql/dialect.js";
import { postgres } from "./postgres/dialect.js";
import { sqlite } from "./sqlite/dialect.js";
import type { SqlDialect } from "./types.js";

/** Every dialect, by name. A new dialect is a folder under sql/ and one entry here. */
const DIALECTS: Readonly<Record<SqlDialect, Dialect>> = { postgres, mysql, sqlite };
/** Detection tries the most specific client shape first: a mysql2 pool has query() too. */
const DETECTION_ORDER: readonly Dialect[] = [sqlite, mysql, postgres];

/**
 * The dialect of `client`: `name` when given (refused unless it is one of ours), else
 * detected from the client's methods; either way the client must have what it calls.
 */
export function dialectOf(client: object, name: unknown): Dialect {
  const dialect = name === undefined ? detectDialect(client) : dialectNamed(name);
  const missing = dialect.needs.filter((method) => !hasMethods(client, [method]));
  if (missing.length > 0) {
    throw new InvalidConfiguration(
      `SqlLock dialect "${dialect.name}" needs a client with ${missing.join(", ")}()${dialect.needsHint}`,
    );
  }
  return dialect;
}

function dialectNamed(name: unknown): Dialect {
  const dialect =
    typeof name === "string" && Object.hasOwn(DIALECTS, name)
      ? DIALECTS[name as SqlDialect]
      : undefined;
  if (dialect === undefined) {
    const names = Object.keys(DIALECTS).map((n) => `"${n}"`);
    throw new InvalidConfiguration(
      `SqlLock option dialect must be ${names.slice(0, -1).join(", ")} or ${names.at(-1)}, got ${describe(name)}`,
    );
  }
  return dialect;
}

function detectDialect(client: object): Dialect {
  const dialect = DETECTION_ORDER.find((d) => hasMethods(client, d.detectBy));
  if (dialect !== undefined) return dialect;
  throw new InvalidConfiguration(
    "SqlLock could not tell the dialect of options.client: pass a pg Pool/Client, a " +
      'mysql2/promise Pool, a better-sqlite3 Database, or set dialect: "postgres" | "mysql" | "sqlite"',
  );
}
