/**
 * The gateway's own cost, measured on the code users install: src/ bundled the way
 * `npm run build` bundles it (tsup over esbuild: ESM, node20, the drivers external), into a
 * temporary directory, once per run. Run through tsx instead, the source carries esbuild's
 * keepNames helper, which names each closure as it is created: a defineProperty per closure
 * per delivery that the published build does not have, and at a microsecond per delivery it
 * would be a third of what we time.
 *
 * `--against <ref>` bundles a commit's src/ the same way ({@link buildAt}), against the same
 * node_modules, so the two builds differ in their sources alone.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "tsup";

export interface PublishedBuild {
  readonly core: typeof import("../src/index.js");
  readonly testing: typeof import("../src/testing/index.js");
}

/** A commit's build, and the commit it was made from. */
export interface BuildAtRef extends PublishedBuild {
  readonly ref: string;
  /** The full hash `ref` named when the build was made. */
  readonly commit: string;
}

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
let loaded: Promise<PublishedBuild> | undefined;

/** The package's main and testing entries as built for publishing; built once, on first use. */
export function publishedBuild(): Promise<PublishedBuild> {
  loaded ??= bundle(root);
  return loaded;
}

/**
 * The same entries built from `ref`'s src/ and tsconfig.json, extracted with `git archive`
 * into .tmp/ (ignored by git) and removed once bundled. The bench code drives this build
 * through today's public API: a name it needs that the old build lacks fails here, by name.
 */
export async function buildAt(ref: string): Promise<BuildAtRef> {
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  let commit: string;
  try {
    commit = git("rev-parse", "--verify", "--quiet", `${ref}^{commit}`).trim();
  } catch {
    throw new Error(`--against: ${ref} names no commit in this repository`);
  }
  mkdirSync(join(root, ".tmp"), { recursive: true });
  const tree = mkdtempSync(join(root, ".tmp", `bench-${commit.slice(0, 7)}-`));
  const removeTree = () => rmSync(tree, { recursive: true, force: true });
  process.once("exit", removeTree); // an interrupted build leaves nothing either
  try {
    // Outside node_modules, so esbuild treats the files as sources; their bare imports
    // resolve up the tree to the project's node_modules, as the working tree's do.
    const archive = execFileSync(
      "git",
      ["archive", "--format=tar", commit, "src", "tsconfig.json"],
      {
        cwd: root,
        maxBuffer: 256 * 2 ** 20,
      },
    );
    execFileSync("tar", ["-x", "-C", tree], { input: archive });
    const built = await bundle(tree);
    const missing = [
      ...["lock", "idempotentHttp", "idempotentMessage", "InMemoryLock", "gatewayDisabled"].filter(
        (name) => typeof (built.core as Record<string, unknown>)[name] !== "function",
      ),
      ...["pushBody", "createTestIdentity"].filter(
        (name) => typeof (built.testing as Record<string, unknown>)[name] !== "function",
      ),
    ];
    if (missing.length > 0) {
      throw new Error(`--against: the build of ${ref} does not export ${missing.join(", ")}`);
    }
    return { ...built, ref, commit };
  } finally {
    removeTree();
    process.off("exit", removeTree);
  }
}

/** Bundles `tree`'s src/ entries with `tree`'s tsconfig.json; the output lives until exit. */
async function bundle(tree: string): Promise<PublishedBuild> {
  // Inside the project, so the build's lazy imports of optional peers (google-auth-library,
  // @opentelemetry/api) resolve from its node_modules as the installed package's would.
  const cache = join(root, "node_modules", ".cache");
  mkdirSync(cache, { recursive: true });
  const outDir = mkdtempSync(join(cache, "bench-build-"));
  process.once("exit", () => rmSync(outDir, { recursive: true, force: true }));
  await build({
    config: false,
    silent: true,
    // Named, not found from the working directory: each tree's own paths and target.
    tsconfig: join(tree, "tsconfig.json"),
    entry: {
      index: join(tree, "src/index.ts"),
      "testing/index": join(tree, "src/testing/index.ts"),
    },
    outDir,
    format: ["esm"],
    target: "node20",
    splitting: true,
    treeshake: true,
    dts: false,
    sourcemap: false,
    loader: { ".lua": "text", ".sql": "text" },
    external: ["vitest"],
  });
  const entry = (name: string) => pathToFileURL(join(outDir, `${name}.js`)).href;
  return {
    core: (await import(entry("index"))) as PublishedBuild["core"],
    testing: (await import(entry("testing/index"))) as PublishedBuild["testing"],
  };
}
