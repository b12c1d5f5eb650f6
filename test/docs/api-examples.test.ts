/**
 * Every `@example` block in the TSDoc of src/ is TypeScript a user may paste: extract them all
 * and type-check them in one ts.Program against tsconfig.json (whose `paths` map the package
 * names to src/), each snippet as its own ES module.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

interface Snippet {
  /** Where the block sits, for the failure message: `src/core/verbs.ts:170`. */
  where: string;
  code: string;
}

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
        where: `${relative(root, file)}:${startLine + i}`,
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
    const config = ts.getParsedCommandLineOfConfigFile(
      join(root, "tsconfig.json"),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
    );
    if (!config) throw new Error("tsconfig.json could not be read");
    // Virtual files beside this test: ESM (package.json "type": "module"), so top-level await works.
    const files = new Map(
      snippets.map((s, i) => [
        join(root, "test/docs", `__example_${i}.ts`),
        // A snippet without imports would be a script sharing one global scope with the rest.
        `${s.code}\nexport {};\n`,
      ]),
    );
    const host = ts.createCompilerHost(config.options);
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (name, language, onError, create) => {
      const code = files.get(resolve(name));
      return code === undefined
        ? getSourceFile(name, language, onError, create)
        : ts.createSourceFile(name, code, language, true);
    };
    const fileExists = host.fileExists.bind(host);
    host.fileExists = (name) => files.has(resolve(name)) || fileExists(name);
    const program = ts.createProgram([...files.keys()], config.options, host);

    const byFile = new Map([...files.keys()].map((name, i) => [name, snippets[i] as Snippet]));
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file === undefined || byFile.has(resolve(d.file.fileName)))
      .map((d) => {
        const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
        if (!d.file || d.start === undefined) return text;
        const snippet = byFile.get(resolve(d.file.fileName)) as Snippet;
        const { line } = d.file.getLineAndCharacterOfPosition(d.start);
        const [file, at] = snippet.where.split(":");
        return `${file}:${Number(at) + line + 1}: ${text}`;
      });
    expect(problems).toEqual([]);
  });
});
