// A new user's first hour, scripted: pack the package as npm would publish it, install it in an
// empty project beside express and nothing else (no optional peer), type-check the README's quick
// starts and a consumer's own files with TypeScript 7 and 5.9 under strict and
// exactOptionalPropertyTypes, then run one quick start end to end with node:test.
//
//   npm run test:newcomer            # about a minute: two npm installs from the registry
//
// Exit 1 on any failure, with the step that failed. The project is left in .tmp/newcomer.
import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const app = join(root, ".tmp", "newcomer");
/** What `npm i -D typescript` gives today, and the last 5.x. */
const TYPESCRIPT = { 7: "7.0.2", 5.9: "5.9.3" };
const PEERS = [
  "@google-cloud/datastore",
  "@google-cloud/firestore",
  "@google-cloud/spanner",
  "@google-cloud/pubsub",
  "ioredis",
  "redis",
  "@valkey/valkey-glide",
  "pg",
  "mysql2",
  "better-sqlite3",
  "google-auth-library",
  "@opentelemetry/api",
];

const say = (text) => console.log(`newcomer: ${text}`);
function run(step, command, args, cwd = app) {
  say(`${step}: ${command} ${args.join(" ")}`);
  try {
    return execFileSync(command, args, {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (error) {
    console.error(`newcomer: ${step} failed\n${error.stdout ?? ""}${error.stderr ?? ""}`);
    process.exit(1);
  }
}

rmSync(app, { recursive: true, force: true });
mkdirSync(join(app, "src"), { recursive: true });

// 1. The package as published.
run("build", "npm", ["run", "build", "--silent"], root);
const packed = JSON.parse(
  run("pack", "npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", app], root),
)[0].filename;

// 2. An empty project: the package, express, and the two compilers. No optional peer.
writeFileSync(
  join(app, "package.json"),
  `${JSON.stringify({ name: "newcomer-app", private: true, type: "module" }, null, 2)}\n`,
);
run("install", "npm", [
  "install",
  "--no-audit",
  "--no-fund",
  "--loglevel=error",
  `./${packed}`,
  "express@5",
  "@types/express@5",
  "@types/node@22",
  `typescript@${TYPESCRIPT[7]}`,
  `typescript59@npm:typescript@${TYPESCRIPT[5.9]}`,
]);
const installed = PEERS.filter((peer) => existsSync(join(app, "node_modules", peer)));
if (installed.length > 0) {
  console.error(
    `newcomer: optional peers were installed with the package: ${installed.join(", ")}`,
  );
  process.exit(1);
}

// 3. The README's quick starts that need no optional peer, each a module of the project.
const readme = readFileSync(join(root, "README.md"), "utf8");
const allowed = /^(gcp-pubsub-idempotency(\/[\w/]+)?|express|node:\w+)$/;
let quickStarts = 0;
for (const [i, match] of [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].entries()) {
  const code = match[1];
  const imports = [...code.matchAll(/from "([^"]+)"/g)].map((m) => m[1]);
  if (!imports.every((name) => allowed.test(name))) continue;
  const line = readme.slice(0, match.index).split("\n").length;
  writeFileSync(join(app, "src", `readme-${i}.ts`), `// README.md:${line}\n${code}\nexport {};\n`);
  quickStarts++;
}
say(`${quickStarts} README quick starts need no optional peer`);
if (quickStarts < 3) {
  console.error("newcomer: fewer than 3 README blocks found; the README or this script changed");
  process.exit(1);
}
cpSync(join(root, "scripts", "newcomer"), join(app, "src"), { recursive: true });
writeFileSync(
  join(app, "tsconfig.json"),
  `${JSON.stringify(
    {
      compilerOptions: {
        target: "es2022",
        module: "nodenext",
        moduleResolution: "nodenext",
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        skipLibCheck: false,
        outDir: "dist",
        rootDir: "src",
        types: ["node"],
      },
      include: ["src"],
    },
    null,
    2,
  )}\n`,
);

// 4. Both compilers, strict; 5.9 also emits what step 5 runs.
run("TypeScript 7", join(app, "node_modules", ".bin", "tsc"), ["-p", ".", "--noEmit"]);
run("TypeScript 5.9", "node", [join(app, "node_modules", "typescript59", "bin", "tsc"), "-p", "."]);

// 5. One quick start end to end: the Express push service, its pushes from /testing.
const output = run("node:test", "node", ["--test", "dist/push-service.test.js"]);
const passed = /# pass (\d+)/.exec(output)?.[1];
const failed = /# fail (\d+)/.exec(output)?.[1];
say(`end to end: ${passed} passed, ${failed} failed`);
if (failed !== "0" || !passed || passed === "0") process.exit(1);
say(
  `OK: ${packed}, ${readdirSync(join(app, "src")).length} files type-checked with TypeScript ${TYPESCRIPT[7]} and ${TYPESCRIPT[5.9]}`,
);
