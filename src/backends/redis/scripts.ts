import { type Script, script } from "./adapter.js";
import claimLua from "./claim.lua";
import completeLua from "./complete.lua";
import forceReleaseLua from "./forceRelease.lua";
import inspectLua from "./inspect.lua";
import preludeLua from "./prelude.lua";
import releaseLua from "./release.lua";
import renewLua from "./renew.lua";

/** A helper of prelude.lua: its name, its text, and the helpers its text calls. */
interface Helper {
  readonly name: string;
  readonly text: string;
  readonly calls: readonly string[];
}

/** The `local function name(…)` … `end` blocks of a prelude, in its order. */
export function preludeHelpers(prelude: string): Helper[] {
  const blocks = [...prelude.matchAll(/^local function (\w+)\([^)]*\)\n[\s\S]*?^end$/gm)];
  const names = blocks.map((m) => m[1] as string);
  return blocks.map((m) => {
    const text = m[0];
    const name = m[1] as string;
    const body = text.slice(text.indexOf("\n"));
    return { name, text, calls: names.filter((n) => n !== name && calls(body, n)) };
  });
}

/** The line a legacy script starts with: the one after `-- legacy:` in the prelude. */
export function legacyLine(prelude: string): string {
  const line = /^-- legacy:\n(.+)$/m.exec(prelude)?.[1];
  if (line === undefined) throw new Error("prelude.lua has no `-- legacy:` line");
  return line;
}

function calls(code: string, name: string): boolean {
  return new RegExp(`(?<![\\w.:])${name}\\(`).test(code);
}

/** A script file's code, without its `--[[ … ]]` header. */
export function code(file: string): string {
  return file.replace(/^--\[\[[\s\S]*?\]\]\n/, "");
}

/**
 * One script: the prelude's helpers the file calls, with those they call, in the prelude's
 * order, then the file. Its `legacy` is the prelude's legacy line then the same text, for a
 * server that refuses a write after TIME without it (adapter.ts).
 */
export function assemble(prelude: string, file: string): Script {
  const helpers = preludeHelpers(prelude);
  const needed = new Set<string>();
  const add = (name: string) => {
    if (needed.has(name)) return;
    needed.add(name);
    for (const n of helpers.find((h) => h.name === name)?.calls ?? []) add(n);
  };
  for (const h of helpers) if (calls(code(file), h.name)) add(h.name);
  const used = helpers.filter((h) => needed.has(h.name)).map((h) => `${h.text}\n`);
  const text = `${used.join("")}${file}`;
  return { ...script(text), legacy: script(`${legacyLine(prelude)}\n${text}`) };
}

export const CLAIM = assemble(preludeLua, claimLua);
export const COMPLETE = assemble(preludeLua, completeLua);
export const RELEASE = assemble(preludeLua, releaseLua);
export const RENEW = assemble(preludeLua, renewLua);
// Operator calls (the CLI's inspect and release).
export const INSPECT = assemble(preludeLua, inspectLua);
export const FORCE_RELEASE = assemble(preludeLua, forceReleaseLua);
