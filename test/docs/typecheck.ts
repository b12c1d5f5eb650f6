import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** A piece of TypeScript lifted out of a document, and where it came from. */
export interface Snippet {
  /** Shown in failures, e.g. "README.md:120". */
  origin: string;
  code: string;
}

/**
 * Type-checks every snippet as its own module in one program, with the project's tsconfig (so
 * `gcp-pubsub-idempotency/*` resolves to src) plus the declarations in `globals` (the
 * placeholders a snippet may use without defining, such as the user's own `placeOrder`).
 * Resolves to one line per diagnostic, "origin line: message"; empty when all is well.
 */
export function typecheckSnippets(snippets: Snippet[], globals?: string): string[] {
  const config = ts.readConfigFile(join(root, "tsconfig.json"), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  // Virtual files live in the project root so the tsconfig's paths resolve from them.
  const virtual = new Map<string, Snippet>();
  snippets.forEach((snippet, i) => {
    // An export makes each snippet a module, so two snippets may declare the same names.
    virtual.set(join(root, `__snippet_${i}.ts`), {
      ...snippet,
      code: `${snippet.code}\nexport {};\n`,
    });
  });
  const host = ts.createCompilerHost(parsed.options, true);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (name) => virtual.has(name) || fileExists.call(host, name);
  host.readFile = (name) => virtual.get(name)?.code ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) => {
    const snippet = virtual.get(name);
    if (snippet !== undefined) return ts.createSourceFile(name, snippet.code, language, true);
    return getSourceFile.call(host, name, language, ...rest);
  };
  const program = ts.createProgram({
    rootNames: [...virtual.keys(), join(root, "src/types.d.ts"), ...(globals ? [globals] : [])],
    options: { ...parsed.options, noEmit: true, noUnusedLocals: false },
    host,
  });
  const problems: string[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
    const file = diagnostic.file;
    const snippet = file === undefined ? undefined : virtual.get(file.fileName);
    if (file === undefined || snippet === undefined) {
      problems.push(`${file?.fileName ?? "program"}: ${message}`);
      continue;
    }
    const { line } = file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    problems.push(`${snippet.origin} +${line}: ${message}`);
  }
  return problems;
}

/** The fenced code blocks of a Markdown text whose language is one of `languages`. */
export function codeBlocks(
  markdown: string,
  origin: string,
  languages: string[],
): Array<Snippet & { language: string }> {
  const blocks: Array<Snippet & { language: string }> = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)/.exec(lines[i] ?? "");
    if (open === null) continue;
    const indent = open[1]?.length ?? 0;
    const language = open[2] ?? "";
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i] ?? ""); i++) {
      body.push((lines[i] ?? "").slice(indent));
    }
    if (languages.includes(language)) {
      blocks.push({ origin: `${origin}:${start + 1}`, code: body.join("\n"), language });
    }
  }
  return blocks;
}
