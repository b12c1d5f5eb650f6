import { readFileSync } from "node:fs";
import { defineConfig, type Plugin } from "vitest/config";
import SummaryReporter from "./test/harness/summary-reporter.js";

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

export default defineConfig({
  plugins: [textFiles],
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ["default", new SummaryReporter()],
  },
});
