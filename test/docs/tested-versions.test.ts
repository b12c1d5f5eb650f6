// The peer ranges and README's table say exactly what CI tests: the majors of each peer
// dependency installed in the lock file's tree (npm test, the Node matrix) and in the newest
// majors' tree (npm run test:newest, ci/newest/package-lock.json).
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const json = (path: string) => JSON.parse(readFileSync(join(root, path), "utf8")) as unknown;
const peers = (json("package.json") as { peerDependencies: Record<string, string> })
  .peerDependencies;
type Lock = { packages: Record<string, { version?: string }> };
const trees = {
  lock: json("package-lock.json") as Lock,
  newest: json("ci/newest/package-lock.json") as Lock,
};

const major = (version: string) => Number(version.split(".")[0]);

/**
 * The versions of `name` the tests use in a tree: the top-level one, and a copy nested in another
 * peer (@redis/client 5 under redis 5, which the tests' clients come from). Copies under other
 * packages (a benchmark peer's own datastore) are not tested through the package.
 */
function installed(lock: Lock, name: string): string[] {
  const paths = [
    `node_modules/${name}`,
    ...Object.keys(peers).map((peer) => `node_modules/${peer}/node_modules/${name}`),
  ];
  return paths.flatMap((path) => lock.packages[path]?.version ?? []);
}

/** The top-level version of `name` in a tree. */
function topLevel(lock: Lock, name: string): string {
  const version = lock.packages[`node_modules/${name}`]?.version;
  if (version === undefined) throw new Error(`${name} is not installed at the top of the tree`);
  return version;
}

/** The alternatives of a range made of `^X.Y.Z` terms joined by `||`. */
function carets(range: string): { major: number; minor: number }[] {
  return range.split("||").map((term) => {
    const match = /^\s*\^(\d+)\.(\d+)\.(\d+)\s*$/.exec(term);
    if (match === null) throw new Error(`"${term.trim()}" in "${range}" is not a ^X.Y.Z term`);
    return { major: Number(match[1]), minor: Number(match[2]) };
  });
}

describe("what CI tests is what the package says", () => {
  it("each peer range admits exactly the majors installed in the two trees", () => {
    for (const [name, range] of Object.entries(peers)) {
      const tested = new Set(
        [...installed(trees.lock, name), ...installed(trees.newest, name)].map(major),
      );
      const admitted = carets(range);
      expect(new Set(admitted.map((c) => c.major)), `${name} ${range}`).toEqual(tested);
      // The newest tree's version is within the range (a minor above it would be too).
      for (const tree of Object.values(trees)) {
        const [m, n] = topLevel(tree, name).split(".").map(Number);
        const term = admitted.find((c) => c.major === m);
        expect(term !== undefined && (n ?? 0) >= term.minor, `${name} ${range}`).toBe(true);
      }
    }
  });

  it("README's table gives each peer's majors in the lock file's tree and the newest one", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    for (const name of Object.keys(peers)) {
      const row = readme.split("\n").find((line) => line.startsWith(`| ${name} `));
      expect(row, name).toBeDefined();
      // Split on the table's pipes, not on the escaped ones inside a range.
      const cells = (row ?? "").split(/(?<!\\)\|/).map((cell) => cell.trim());
      const version = (tree: Lock) => {
        const v = topLevel(tree, name).split(".");
        return name === "@opentelemetry/api" ? `${v[0]}.${v[1]}` : `${v[0]}`;
      };
      expect(cells[2]?.split(" ")[0], `${name}: lock file column`).toBe(version(trees.lock));
      expect(cells[3], `${name}: newest column`).toBe(version(trees.newest));
      expect(cells[4], `${name}: range column`).toBe(`\`${peers[name]?.replaceAll("|", "\\|")}\``);
    }
  });

  it("ci/newest pins the newest tree's top-level versions", () => {
    const pins = json("ci/newest/versions.json") as { devDependencies: Record<string, string> };
    for (const [name, version] of Object.entries(pins.devDependencies)) {
      expect(topLevel(trees.newest, name), name).toBe(version);
    }
  });
});
