// Opening the postgres, mysql and sqlite stores: one connection of the dialect's driver, made
// at once (a SQLite file must exist already), and a SqlLock over it.
import { CONNECT_TIMEOUT_MS, defined, loadDriver, reach, type Ttl } from "./connect.js";
import { type OpenStore, opened } from "./reads.js";
import type { SpecOf } from "./url.js";

export async function openSql(
  spec: SpecOf<"postgres" | "mysql" | "sqlite">,
  table: string | undefined,
  ttl: Ttl,
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
