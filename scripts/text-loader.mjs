// Node module hook: import .lua and .sql files as text, as the tsup build and vitest do.
// Use after tsx: node --import tsx --import ./scripts/text-loader.mjs file.ts
import { readFile } from "node:fs/promises";
import { register } from "node:module";
import { isMainThread } from "node:worker_threads";

const TEXT = /\.(lua|sql)$/;

export async function load(url, context, nextLoad) {
  if (!TEXT.test(new URL(url).pathname)) return nextLoad(url, context);
  const text = await readFile(new URL(url), "utf8");
  return {
    format: "module",
    shortCircuit: true,
    source: `export default ${JSON.stringify(text)};`,
  };
}

// Imported with --import this runs on the main thread and registers itself as the hooks
// module; loaded as that hooks module (on the loader thread) it only provides `load`.
if (isMainThread) register(import.meta.url);
