/**
 * The CLI's own --help texts, as docs/operations.md quotes them: `node --import tsx
 * scripts/cli-help-doc.ts` rewrites the quoted blocks in place; test/docs/cli-help.test.ts
 * fails when they drift from the CLI.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { runCli } from "../src/cli/main.js";

export const COMMANDS = ["inspect", "release", "purge", "doctor"] as const;
export const DOC = fileURLToPath(new URL("../docs/operations.md", import.meta.url));

/** What `gcp-pubsub-idempotency <command> --help` prints. */
export async function helpOf(command: string): Promise<string> {
  let text = "";
  await runCli([command, "--help"], {
    env: {},
    out: (t) => {
      text += t;
    },
    err: () => {},
    errIsTerminal: false,
    inIsTerminal: false,
    ask: async () => undefined,
  });
  return text.trimEnd();
}

/** The document with each `<!-- help: cmd -->` block replaced by the CLI's current text. */
export async function withCurrentHelp(doc: string): Promise<string> {
  let out = doc;
  for (const command of COMMANDS) {
    const block = new RegExp(
      `(<!-- help: ${command} -->\\n\`\`\`text\\n)[\\s\\S]*?(^\`\`\`$)`,
      "m",
    );
    out = out.replace(
      block,
      (_, head: string, tail: string) => `${head}${HELP.get(command)}\n${tail}`,
    );
  }
  return out;
}

const HELP = new Map<string, string>();
for (const command of COMMANDS) HELP.set(command, await helpOf(command));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(DOC, await withCurrentHelp(readFileSync(DOC, "utf8")));
}
