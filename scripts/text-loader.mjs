// Loads .lua and .sql files as `export default "<file text>"`:
//   node --import tsx --import ./scripts/text-loader.mjs file.ts
import { readFile } from "node:fs/promises";
import { register } from "node:module";
import { isMainThread } from "node:worker_threads";

export async function load(url, context, nextLoad) {
  if (url.endsWith(".lua") || url.endsWith(".sql")) {
    const text = await readFile(new URL(url), "utf8");
    return {
      format: "module",
      source: `export default ${JSON.stringify(text)}`,
      shortCircuit: true,
    };
  }
  return nextLoad(url, context);
}

if (isMainThread) register(import.meta.url);
