// Every TypeScript block of the README and the guides, type-checked by TypeScript 7 (the
// `typescript7` alias of typescript@7, the major `npm i -D typescript` installs today) as the
// documentation test checks them with 5.9: each block its own module, the package's imports
// resolved to src by the project's tsconfig, the reader's own functions from the snippet
// globals. TypeScript 7's compiler API differs from 5.9's, so this drives its CLI on files.
//
//   npm run typecheck:docs-ts7
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, ".tmp", "docs-ts7");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const documents = [
  ...readdirSync(root).filter((name) => name.endsWith(".md")),
  ...readdirSync(join(root, "docs"), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".md") && !name.startsWith("api"))
    .map((name) => join("docs", name)),
];
const origins = new Map();
let n = 0;
for (const file of documents) {
  const text = readFileSync(join(root, file), "utf8");
  for (const match of text.matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```$/gm)) {
    const line = text.slice(0, match.index).split("\n").length;
    const name = `snippet-${n++}.ts`;
    origins.set(name, `${file}:${line}`);
    writeFileSync(join(out, name), `${match[1]}\nexport {};\n`);
  }
}
const rel = (path) => relative(out, join(root, path));
writeFileSync(
  join(out, "tsconfig.json"),
  `${JSON.stringify(
    {
      extends: rel("tsconfig.json"),
      compilerOptions: { noEmit: true, noUnusedLocals: false, rootDir: rel(".") },
      // `files`, since the base config excludes test/docs/fixtures from its globs.
      files: [rel("src/types.d.ts"), rel("test/docs/fixtures/snippet-globals.d.ts")],
      include: ["*.ts"],
    },
    null,
    2,
  )}\n`,
);
const tsc = join(root, "node_modules", "typescript7", "bin", "tsc");
const version = execFileSync("node", [tsc, "-v"], { encoding: "utf8" }).trim();
try {
  execFileSync("node", [tsc, "-p", out], { cwd: root, encoding: "utf8", stdio: "pipe" });
} catch (error) {
  const text = `${error.stdout ?? ""}${error.stderr ?? ""}`.replace(
    /snippet-\d+\.ts/g,
    (name) => `${name} (${origins.get(name)})`,
  );
  console.error(`docs under ${version}: errors\n${text}`);
  process.exit(1);
}
console.log(`docs under ${version}: ${n} TypeScript blocks type-check`);
