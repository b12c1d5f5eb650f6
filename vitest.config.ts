import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vitest/config";
import SummaryReporter from "./test/harness/summary-reporter.js";
import { hasSdkTraceBase } from "./test/support/trace-sdk.js";

// Lua and SQL files are imported as text, as the tsup build does with its text loader.
const textFiles: Plugin = {
  name: "text-files",
  load(id) {
    if (/\.(lua|sql)$/.test(id)) {
      return `export default ${JSON.stringify(readFileSync(id, "utf8"))};`;
    }
    return null;
  },
};

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

// OpenTelemetry 3 (the newest majors' tree, scripts/newest-tree.mjs) has no sdk-trace-base.
const sdkTraceBase = hasSdkTraceBase
  ? []
  : [
      {
        find: /^@opentelemetry\/sdk-trace-base$/,
        replacement: fileURLToPath(new URL("./test/support/otel-sdk-trace-3.mjs", import.meta.url)),
      },
    ];

export default defineConfig({
  plugins: [textFiles],
  // Examples import the package by name, as users do; tests run them from the sources.
  resolve: {
    alias: [
      { find: /^gcp-pubsub-idempotency$/, replacement: src("index.ts") },
      { find: /^gcp-pubsub-idempotency\/testing$/, replacement: src("testing/index.ts") },
      { find: /^gcp-pubsub-idempotency\/testing\/vitest$/, replacement: src("testing/vitest.ts") },
      {
        find: /^gcp-pubsub-idempotency\/(redis|sql|datastore|firestore|spanner)$/,
        replacement: src("backends/$1/index.ts"),
      },
      ...sdkTraceBase,
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    // Loopback only: the network guard in every worker, and METADATA_SERVER_DETECTION=none.
    setupFiles: ["./test/harness/network-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ["default", new SummaryReporter()],
  },
});
