// The statements of one table: each dialect's templates with the table name checked and
// quoted, and the header comments dropped.
import { InvalidConfiguration } from "../../core/errors.js";
import { describe } from "../../core/validate.js";
import type { Dialect } from "./dialect.js";

/** Rows per purge batch: templated into each dialect's purge.sql as `{{purgeBatch}}`. */
export const PURGE_BATCH = 1000;
/** Whole lines of `--` comments, stripped from every statement but the DDL. */
const COMMENT_LINES = /^[ \t]*--.*(\r?\n|$)/gm;
/** The DDL: the table's, and the upgrade of a table made by 0.1. */
const KEEPS_COMMENTS: ReadonlySet<string> = new Set(["schema", "upgrade"]);
// Short enough that the derived index name stays within PostgreSQL's 63-byte identifiers.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

/**
 * The statements of `dialect` on `table`, by template name (`schema` is the DDL). Refuses a
 * table name that is not an identifier (or `qualifier.identifier` where the dialect takes one).
 */
export function renderStatements(dialect: Dialect, table: unknown): Record<string, string> {
  const { quoted, name, index } = parseTable(dialect, table);
  const sql: Record<string, string> = {};
  for (const [file, template] of Object.entries(dialect.templates)) {
    // The header comments document the file; a driver that keys its statement cache on the
    // text (mysql2) would hash them on every call. The DDL keeps them: users apply it.
    const text = KEEPS_COMMENTS.has(file) ? template : template.replace(COMMENT_LINES, "");
    sql[file] = text
      .replaceAll("{{table}}", quoted)
      .replaceAll("{{name}}", name)
      .replaceAll("{{index}}", index)
      .replaceAll("{{purgeBatch}}", String(PURGE_BATCH));
  }
  return sql;
}

/**
 * Validate the table name and quote it for the dialect; also its last part unquoted (an
 * identifier, safe inside a string literal) and the index name derived from it.
 */
function parseTable(
  dialect: Dialect,
  table: unknown,
): { quoted: string; name: string; index: string } {
  const parts = typeof table === "string" ? table.split(".") : [];
  const allowed = dialect.qualifier ? [1, 2] : [1];
  if (!allowed.includes(parts.length) || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new InvalidConfiguration(
      `SqlLock option table must be an identifier (letters, digits, underscores, not starting with a ` +
        `digit, at most 48 characters each)${dialect.qualifier ? `, optionally "${dialect.qualifier}.table"` : ""}, ` +
        `got ${describe(table)}`,
    );
  }
  const name = parts[parts.length - 1] as string;
  return {
    quoted: parts.map(dialect.quote).join("."),
    name,
    index: dialect.quote(`${name}_expires_at_idx`),
  };
}
