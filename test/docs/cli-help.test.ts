import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { COMMANDS, DOC, withCurrentHelp } from "../../scripts/cli-help-doc.js";

describe("docs/operations.md", () => {
  it("quotes each command's --help as the CLI prints it (node --import tsx scripts/cli-help-doc.ts)", async () => {
    const doc = readFileSync(DOC, "utf8");
    for (const command of COMMANDS) expect(doc).toContain(`<!-- help: ${command} -->`);
    expect(await withCurrentHelp(doc)).toBe(doc);
  });
});
