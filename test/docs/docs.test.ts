import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { hasSdkTraceBase } from "../support/trace-sdk.js";
import { codeBlocks, typecheckSnippets } from "./typecheck.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  scripts: Record<string, string>;
  exports: unknown;
};

/** Where README's links point for everything the package does not ship. */
const REPOSITORY_BLOB =
  "https://github.com/gcp-pubsub-idempotency/gcp-pubsub-idempotency/blob/main/";

/** The anchors GitHub gives a document's headings. */
function headingSlugs(path: string): Set<string> {
  const slugs = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.+)$/.exec(line);
    if (heading)
      slugs.add(
        (heading[1] ?? "")
          .toLowerCase()
          .replace(/[^\p{L}\p{N}\- _]/gu, "")
          .replace(/ /g, "-"),
      );
  }
  return slugs;
}

function markdownFiles(): string[] {
  const top = readdirSync(root).filter((name) => name.endsWith(".md"));
  const docs = readdirSync(join(root, "docs"), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".md") && !name.startsWith("api"))
    .map((name) => join("docs", name));
  return [...top, ...docs].sort();
}

const documents = markdownFiles().map((file) => ({
  file,
  blocks: codeBlocks(readFileSync(join(root, file), "utf8"), file, [
    "",
    "ts",
    "typescript",
    "sh",
    "mermaid",
    "text",
    "json",
  ]),
}));
const blocks = documents.flatMap((d) => d.blocks);

/**
 * OpenTelemetry's trace SDK under its 2.x name and its 3.x one: the lock file's tree has the
 * first (and the second, older, as some package's dependency), the newest majors' tree
 * (npm run test:newest) only the second, and docs/telemetry.md shows both. A block is
 * type-checked in the tree whose SDK it imports.
 */
const otherTraceSdk = hasSdkTraceBase
  ? "@opentelemetry/sdk-trace"
  : "@opentelemetry/sdk-trace-base";
const importsOtherSdk = (code: string) => code.includes(`from "${otherTraceSdk}"`);

describe("documentation code blocks", () => {
  it("finds the documents and their blocks", () => {
    expect(documents.map((d) => d.file)).toEqual(
      expect.arrayContaining(["README.md", "DECISIONS.md", "docs/state-machine.md"]),
    );
    expect(blocks.filter((b) => b.language === "ts").length).toBeGreaterThan(10);
  });

  it("every block says its language: ts is type-checked, sh is checked below", () => {
    expect(blocks.filter((b) => b.language === "").map((b) => b.origin)).toEqual([]);
  });

  it("every TypeScript block type-checks against the package's sources", () => {
    const snippets = blocks.filter(
      (b) => (b.language === "ts" || b.language === "typescript") && !importsOtherSdk(b.code),
    );
    const problems = typecheckSnippets(
      snippets,
      join(root, "test/docs/fixtures/snippet-globals.d.ts"),
    );
    expect(problems).toEqual([]);
    // A type-check of every block: 5-20 s, more on a busy machine; this only catches a hang.
  }, 120_000);

  it("every `npm run` in a shell block names a script of package.json", () => {
    const named = blocks
      .filter((b) => b.language === "sh")
      .flatMap((b) =>
        [...b.code.matchAll(/npm run ([\w:-]+)/g)].map((m) => ({ at: b.origin, script: m[1] })),
      );
    expect(named.length).toBeGreaterThan(3);
    expect(named.filter((n) => n.script === undefined || !(n.script in pkg.scripts))).toEqual([]);
  });

  it("every link into the repository, from any document, lands on a file and heading that exist", () => {
    const broken: string[] = [];
    for (const { file } of documents) {
      const text = readFileSync(join(root, file), "utf8");
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const link = match[1] ?? "";
        if (/^(mailto:|https?:(?!\/\/github\.com\/gcp-pubsub-idempotency\/))/.test(link)) continue;
        const [path = "", anchor] = link.replace(REPOSITORY_BLOB, "").split("#");
        const target = link.startsWith(REPOSITORY_BLOB)
          ? join(root, path)
          : path === ""
            ? join(root, file)
            : resolve(root, dirname(file), path);
        if (!existsSync(target)) broken.push(`${file}: ${link} (no such file)`);
        else if (anchor && target.endsWith(".md") && !headingSlugs(target).has(anchor))
          broken.push(`${file}: ${link} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("README links only to what the package ships, and to the repository for the rest", () => {
    const text = readFileSync(join(root, "README.md"), "utf8");
    const relative = [...text.matchAll(/\]\((?!https?:|#|mailto:)([^)#\s]+)/g)].map((m) => m[1]);
    // On npm and inside node_modules only the packed files exist beside README.md.
    expect(relative.filter((path) => path !== "LICENSE")).toEqual([]);
  });

  it("every relative link points at a file that exists", () => {
    const broken: string[] = [];
    for (const { file } of documents) {
      const text = readFileSync(join(root, file), "utf8");
      for (const match of text.matchAll(/\]\((?!https?:|#|mailto:)([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = resolve(root, dirname(file), match[1] ?? "");
        if (!existsSync(target)) broken.push(`${file}: ${relative(root, target)}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe("the published package", () => {
  it("holds only dist, the Lua and SQL files, README, LICENSE and package.json", () => {
    if (!existsSync(join(root, "dist/index.js"))) {
      execFileSync("npm", ["run", "build"], { cwd: root, stdio: "ignore" });
    }
    const output = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    const files = (JSON.parse(output) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map(
      (f) => f.path,
    );
    const allowed = [
      /^dist\/.+\.(c?js|d\.c?ts|c?js\.map)$/,
      /^src\/backends\/redis\/\w+\.lua$/,
      /^src\/backends\/sql\/(postgres|mysql|sqlite)\/\w+\.sql$/,
      /^(README\.md|LICENSE|package\.json)$/,
    ];
    expect(files.filter((f) => !allowed.some((pattern) => pattern.test(f)))).toEqual([]);
    // Every file an export condition names, at any depth of the exports map.
    const leaves = (node: unknown): string[] =>
      typeof node === "string"
        ? [node.replace(/^\.\//, "")]
        : Object.values(node as Record<string, unknown>).flatMap(leaves);
    const targets = leaves(pkg.exports);
    expect(targets).toEqual(expect.arrayContaining(["dist/index.js", "dist/index.d.cts"]));
    expect(targets.filter((t) => !files.includes(t))).toEqual([]);
    expect(files).toEqual(
      expect.arrayContaining(["src/backends/sql/postgres/schema.sql", "LICENSE"]),
    );
  }, 120_000);
});

describe("the snippet checker itself", () => {
  it("reports a snippet that does not type-check, with where it came from", () => {
    const problems = typecheckSnippets(
      [{ origin: "X.md:3", code: 'import { lock } from "gcp-pubsub-idempotency";\nlock(42);' }],
      join(root, "test/docs/fixtures/snippet-globals.d.ts"),
    );
    expect(problems).toEqual([expect.stringMatching(/^X\.md:3 \+1: /)]);
  }, 120_000);
});
