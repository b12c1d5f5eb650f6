import { defineConfig } from "tsup";

// One entry per public subpath; each backend's driver stays external (optional peer).
export default defineConfig({
  entry: {
    index: "src/index.ts",
    "testing/index": "src/testing/index.ts",
    "testing/vitest": "src/testing/vitest.ts",
    "firestore/index": "src/backends/firestore/index.ts",
    "datastore/index": "src/backends/datastore/index.ts",
    "spanner/index": "src/backends/spanner/index.ts",
    "sql/index": "src/backends/sql/index.ts",
    "redis/index": "src/backends/redis/index.ts",
    // The bin (package.json "bin" points at the ESM build); no export condition names it.
    "cli/bin": "src/cli/bin.ts",
  },
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node20",
  splitting: true,
  treeshake: true,
  loader: { ".lua": "text", ".sql": "text" },
  // Only the /testing/vitest entry imports vitest (an optional peer).
  external: ["vitest"],
});
