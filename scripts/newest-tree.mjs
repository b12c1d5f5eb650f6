#!/usr/bin/env node
// `npm run test:newest [-- vitest arguments]`: the whole test suite under the Node major and
// with the newest major of every peer dependency that ci/newest/versions.json names — what a
// new user's `npm i` installs today — beside the lock file's tree, which `npm test` runs.
//
// 1. node@<major> from the npm registry, cached as for `npm run test:node-matrix`.
// 2. A second install tree in the cache (NODE_MATRIX_CACHE/newest-tree): the repository's
//    package.json with the versions of ci/newest/versions.json in devDependencies, installed by
//    `npm ci` from ci/newest/package-lock.json under that Node (install scripts off), and
//    better-sqlite3's addon compiled in place against the headers the node package ships. Kept
//    while package.json, the versions and the lock file are unchanged; a change installs afresh.
//    A lock file that does not match fails `npm ci`: `npm run test:newest -- --update-lock`
//    writes it again from the registry.
// 3. The repository's files (git's, committed or not) copied beside that node_modules, each run.
// 4. Every pinned package's installed version printed, then vitest, with the arguments given.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  cache,
  compileAddon,
  envWithoutNpm,
  installNode,
  nodeInfo,
  sqliteVersion,
} from "./node-matrix/registry-node.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const log = (message) => console.log(`newest-tree: ${message}`);
const pins = JSON.parse(readFileSync(join(root, "ci", "newest", "versions.json"), "utf8"));
const lockFile = join(root, "ci", "newest", "package-lock.json");
const tree = join(cache, "newest-tree");
const args = process.argv.slice(2);
const updateLock = args[0] === "--update-lock";

/** The repository's package.json with the pinned versions in devDependencies. */
function composedManifest() {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  for (const [name, version] of Object.entries(pins.devDependencies)) {
    if (!(name in manifest.devDependencies))
      throw new Error(`ci/newest/versions.json pins ${name}, which package.json does not use`);
    manifest.devDependencies[name] = version;
  }
  // A package the newest majors renamed (OpenTelemetry 3's trace SDK): the old name out, the
  // new one in; vitest.config.ts maps imports of the old name to test/support's shim.
  for (const [old, renamed] of Object.entries(pins.replace ?? {})) {
    if (!(old in manifest.devDependencies))
      throw new Error(`ci/newest/versions.json replaces ${old}, which package.json does not use`);
    delete manifest.devDependencies[old];
    Object.assign(manifest.devDependencies, renamed);
  }
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

/** Runs npm's own CLI under `node`, so engines and native builds see that Node. */
function npm(node, npmArgs, cwd) {
  const cli = join(
    dirname(process.execPath),
    "..",
    "lib",
    "node_modules",
    "npm",
    "bin",
    "npm-cli.js",
  );
  const env = envWithoutNpm();
  env.PATH = `${dirname(node)}:${env.PATH}`;
  const run = spawnSync(node, [cli, ...npmArgs], { cwd, env, stdio: "inherit" });
  if (run.status !== 0) throw new Error(`npm ${npmArgs.join(" ")} failed in ${cwd}`);
}

/** Removes everything in `dir` but the names kept. */
function emptyBut(dir, keep) {
  for (const name of readdirSync(dir)) {
    if (!keep.includes(name)) rmSync(join(dir, name), { recursive: true, force: true });
  }
}

/** Copies git's files of the repository (committed, staged or new, not ignored) into `dir`. */
function copySources(dir) {
  const files = execFileSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 },
  )
    .toString()
    .split("\0")
    .filter((file) => file !== "" && existsSync(join(root, file)));
  for (const file of files) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(root, file), join(dir, file));
  }
  return files.length;
}

const { bin, headers } = installNode(pins.node, log);
const { version, abi } = nodeInfo(bin);
const manifest = composedManifest();
mkdirSync(tree, { recursive: true });

if (updateLock) {
  emptyBut(tree, []);
  writeFileSync(join(tree, "package.json"), manifest);
  npm(bin, ["install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund"], tree);
  copyFileSync(join(tree, "package-lock.json"), lockFile);
  emptyBut(tree, []);
  log(`wrote ${lockFile}`);
  process.exit(0);
}

const stamp = createHash("sha256")
  .update(version)
  .update(manifest)
  .update(readFileSync(lockFile))
  .digest("hex");
const stampFile = join(tree, ".installed");
const installed = existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp;
emptyBut(tree, installed ? ["node_modules", ".installed"] : []);
writeFileSync(join(tree, "package.json"), manifest);
copyFileSync(lockFile, join(tree, "package-lock.json"));
if (!installed) {
  const started = Date.now();
  log(`installing the newest majors under Node ${version} into ${tree}`);
  npm(bin, ["ci", "--ignore-scripts", "--no-audit", "--no-fund"], tree);
  compileAddon(join(tree, "node_modules", "better-sqlite3"), bin, headers, root);
  writeFileSync(stampFile, stamp);
  log(`installed in ${Math.round((Date.now() - started) / 1000)} s`);
}
// The repository's package-lock.json comes back with its files (test/docs/tested-versions.test.ts
// reads both lock files); the manifest the install used wins over the repository's.
const count = copySources(tree);
writeFileSync(join(tree, "package.json"), manifest);

const sqlite = sqliteVersion(bin, tree, process.env);
const versions = [
  ...Object.keys(pins.devDependencies),
  ...Object.values(pins.replace ?? {}).flatMap((renamed) => Object.keys(renamed)),
]
  .map((name) => {
    const file = join(tree, "node_modules", name, "package.json");
    return `${name} ${JSON.parse(readFileSync(file, "utf8")).version}`;
  })
  .join(", ");
log(`Node ${version} (ABI ${abi}), SQLite ${sqlite}; ${count} files of the repository`);
log(`installed: ${versions}`);

const started = Date.now();
const run = spawnSync(bin, [join(tree, "node_modules", "vitest", "vitest.mjs"), "run", ...args], {
  cwd: tree,
  stdio: "inherit",
});
log(
  `Node ${version}: exit ${run.status ?? run.signal} in ${Math.round((Date.now() - started) / 1000)} s`,
);
process.exit(run.status ?? 1);
