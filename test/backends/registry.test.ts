// The registry of built-in backends (src/backends/registry.ts) against what it describes: each
// class at its entry with exactly the optional methods it lists, the package's entries and
// optional peers, and the backends tables of README.md and docs/backends/README.md.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  BACKENDS,
  backendsWith,
  type OptionalMethod,
  STORES,
} from "../../src/backends/registry.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const read = (path: string) => readFileSync(join(root, path), "utf8");
const pkg = JSON.parse(read("package.json")) as {
  exports: Record<string, unknown>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};

/** The module of each package entry that exports a backend, as the build maps them. */
const ENTRY_MODULES: Record<string, () => Promise<Record<string, unknown>>> = {
  ".": () => import("../../src/index.js"),
  "./redis": () => import("../../src/backends/redis/index.js"),
  "./sql": () => import("../../src/backends/sql/index.js"),
  "./datastore": () => import("../../src/backends/datastore/index.js"),
  "./firestore": () => import("../../src/backends/firestore/index.js"),
  "./spanner": () => import("../../src/backends/spanner/index.js"),
};
/** The source file of a subpath entry, by the layout tsup.config.ts and typedoc.json follow. */
const sourceOf = (entry: string) =>
  entry === "." ? "src/index.ts" : `src/backends/${entry.slice(2)}/index.ts`;

/** Package entries that export no backend. */
const NOT_BACKENDS = new Set([".", "./testing", "./testing/vitest", "./package.json"]);
/** Optional peers that are no backend's driver. */
const NOT_DRIVERS = new Set(["@opentelemetry/api", "google-auth-library", "vitest"]);

const EVERY_METHOD: readonly OptionalMethod[] = [
  "renew",
  "purgeExpired",
  "close",
  "inspect",
  "forceRelease",
  "completeInTransaction",
];

describe("the backend registry", () => {
  for (const backend of BACKENDS) {
    it(`${backend.className}: exported by ${backend.entry}, with exactly the optional methods listed`, async () => {
      const load = ENTRY_MODULES[backend.entry];
      expect(load, `no module known for entry ${backend.entry}`).toBeDefined();
      const made = (await load!())[backend.className];
      expect(typeof made).toBe("function");
      const prototype = (made as { prototype: Record<string, unknown> }).prototype;
      const listed: readonly OptionalMethod[] = backend.methods;
      const has = EVERY_METHOD.filter((method) => typeof prototype[method] === "function");
      expect(has).toEqual(EVERY_METHOD.filter((method) => listed.includes(method)));
    });
  }

  it("lists every entry of the package that exports a backend, and only those", () => {
    const subpaths = Object.keys(pkg.exports).filter((entry) => !NOT_BACKENDS.has(entry));
    const listed = BACKENDS.map((b) => b.entry).filter((entry) => entry !== ".");
    expect(listed.sort()).toEqual(subpaths.sort());
    expect(Object.keys(ENTRY_MODULES).sort()).toEqual([".", ...subpaths].sort());
    const tsup = read("tsup.config.ts");
    const typedoc = JSON.parse(read("typedoc.json")) as { entryPoints: string[] };
    for (const entry of listed) {
      expect(tsup).toContain(`"${sourceOf(entry)}"`);
      expect(typedoc.entryPoints).toContain(sourceOf(entry));
    }
  });

  it("names as drivers exactly the optional peers that are drivers", () => {
    const drivers = BACKENDS.flatMap((b) => b.drivers);
    for (const driver of drivers) {
      expect(pkg.peerDependencies[driver], driver).toBeDefined();
      expect(pkg.peerDependenciesMeta[driver]?.optional, driver).toBe(true);
    }
    const peers = Object.keys(pkg.peerDependencies).filter((peer) => !NOT_DRIVERS.has(peer));
    expect([...new Set(drivers)].sort()).toEqual(peers.sort());
  });

  it("gives each store a unique name and unique schemes", () => {
    const names = STORES.map((s) => s.name);
    const schemes = STORES.flatMap((s) => s.schemes);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(schemes).size).toBe(schemes.length);
    for (const scheme of schemes) expect(scheme).toBe(scheme.toLowerCase());
  });

  it("names the backends with a method, in the registry's order", () => {
    expect(backendsWith("completeInTransaction")).toEqual([
      "SqlLock",
      "DatastoreLock",
      "FirestoreLock",
      "SpannerLock",
    ]);
    expect(backendsWith("renew")).toEqual(BACKENDS.map((b) => b.className));
  });
});

/** The rows of the first table in `markdown` whose header begins `| backend | import |`. */
function backendsTable(markdown: string): { header: string[]; rows: string[][] } {
  const lines = markdown.split("\n");
  const start = lines.findIndex((line) => /^\| backend \| import \|/.test(line));
  expect(start, "a table headed | backend | import |").toBeGreaterThan(-1);
  const cells = (line: string) =>
    line
      .slice(1, -1)
      .split(" | ")
      .map((cell) => cell.trim());
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(cells(line));
  }
  return { header: cells(lines[start] as string), rows };
}

/** The backend a row is about: the first `…Lock` named in its first cell. */
const classOf = (row: string[]) => /`(\w+Lock)`/.exec(row[0] ?? "")?.[1];
/** The import column as the registry says it: `/redis` is `./redis`, `core` is `.`. */
const entryOf = (cell: string) => (cell === "core" ? "." : `.${cell.replaceAll("`", "")}`);

describe("the docs' backends tables name every registry entry", () => {
  for (const doc of ["README.md", "docs/backends/README.md"]) {
    it(`${doc}: a row for each backend, at its entry, and none for another`, () => {
      const { rows } = backendsTable(read(doc));
      const named = rows.map(classOf);
      expect([...new Set(named)].sort()).toEqual(BACKENDS.map((b) => b.className).sort());
      for (const row of rows) {
        const backend = BACKENDS.find((b) => b.className === classOf(row));
        expect(entryOf(row[1] ?? ""), row[0]).toBe(backend?.entry);
      }
    });
  }

  it("README.md: each backend's drivers and optional methods as the registry lists them", () => {
    const { header, rows } = backendsTable(read("README.md"));
    const column = (title: string) => header.findIndex((cell) => cell.includes(title));
    const columns: [number, readonly OptionalMethod[]][] = [
      [column("`renew`"), ["renew"]],
      [column("`inspect`, `forceRelease`"), ["inspect", "forceRelease"]],
      [column("`purgeExpired`"), ["purgeExpired"]],
      [column("`close`"), ["close"]],
      [column("transactions"), ["completeInTransaction"]],
    ];
    for (const [index] of columns) expect(index).toBeGreaterThan(1);
    const drivers = column("driver");
    for (const row of rows) {
      const backend = BACKENDS.find((b) => b.className === classOf(row));
      if (backend === undefined) throw new Error(`no registry entry for ${row[0]}`);
      const methods: readonly string[] = backend.methods;
      for (const [index, wanted] of columns) {
        const has = wanted.every((method) => methods.includes(method));
        expect(row[index]?.startsWith("✓"), `${backend.className}: ${header[index]}`).toBe(has);
      }
      const shown = [...(row[drivers] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1]);
      const listed: readonly string[] = backend.drivers;
      for (const driver of shown) expect(listed, backend.className).toContain(driver);
    }
  });
});
