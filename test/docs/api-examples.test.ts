/**
 * Every `@example` block in the TSDoc of src/ is TypeScript a user may paste: extract them all
 * and type-check them in one ts.Program against tsconfig.json (whose `paths` map the package
 * names to src/), each snippet as its own ES module.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type Snippet, typecheckSnippets } from "./typecheck.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The fenced ```ts blocks that follow an `@example` tag inside a doc comment. */
function extractExamples(file: string): Snippet[] {
  const text = readFileSync(file, "utf8");
  const snippets: Snippet[] = [];
  for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const lines = comment[0].split("\n").map((line) => line.replace(/^\s*\*? ?/, ""));
    const startLine = text.slice(0, comment.index).split("\n").length;
    let inExample = false;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] ?? "";
      if (/^@\w+/.test(line)) inExample = line.startsWith("@example");
      if (!inExample || !/^```(ts|typescript)\s*$/.test(line)) continue;
      const end = lines.findIndex((l, j) => j > i && l.startsWith("```"));
      if (end < 0) throw new Error(`${file}:${startLine + i}: unterminated code block`);
      snippets.push({
        origin: `${relative(root, file)}:${startLine + i}`,
        code: lines.slice(i + 1, end).join("\n"),
      });
      i = end;
    }
  }
  return snippets;
}

describe("API reference examples", () => {
  const snippets = sourceFiles(join(root, "src")).flatMap(extractExamples);

  it("exist", () => {
    expect(snippets.length).toBeGreaterThan(50);
  });

  it("type-check against the package's own types", () => {
    expect(typecheckSnippets(snippets)).toEqual([]);
    // One ts.Program of every example: 10-25 s, more on a busy machine; this only catches a hang.
  }, 120_000);
});
