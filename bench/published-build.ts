/**
 * The gateway's own cost, measured on the code users install: src/ bundled the way
 * `npm run build` bundles it (tsup over esbuild: ESM, node20, the drivers external), into a
 * temporary directory, once per run. Run through tsx instead, the source carries esbuild's
 * keepNames helper, which names each closure as it is created: a defineProperty per closure
 * per delivery that the published build does not have, and at a microsecond per delivery it
 * would be a third of what we time.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "tsup";

export interface PublishedBuild {
  readonly core: typeof import("../src/index.js");
  readonly testing: typeof import("../src/testing/index.js");
}

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
let loaded: Promise<PublishedBuild> | undefined;

/** The package's main and testing entries as built for publishing; built once, on first use. */
export function publishedBuild(): Promise<PublishedBuild> {
  loaded ??= bundle();
  return loaded;
}

async function bundle(): Promise<PublishedBuild> {
  // Inside the project, so the build's lazy imports of optional peers (google-auth-library,
  // @opentelemetry/api) resolve from its node_modules as the installed package's would.
  const cache = join(root, "node_modules", ".cache");
  mkdirSync(cache, { recursive: true });
  const outDir = mkdtempSync(join(cache, "bench-build-"));
  process.once("exit", () => rmSync(outDir, { recursive: true, force: true }));
  await build({
    config: false,
    silent: true,
    entry: {
      index: join(root, "src/index.ts"),
      "testing/index": join(root, "src/testing/index.ts"),
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
