#!/usr/bin/env node
// `npm run check:size`: no TypeScript file in src/ over 400 lines, and no header that excuses a
// file's size instead (issue 29: one concern per file). Prints every offender, exits 1 if any.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const MAX_LINES = 400;
/** A comment that explains a size away ("Over 350 lines because …") rather than fixing it. */
const EXCUSE = /\b(over|more than|above)\s+\d{3}\s+lines\b/i;

const root = join(fileURLToPath(new URL(".", import.meta.url)), "..");
const offenders = [];
function walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path);
    else if (entry.name.endsWith(".ts")) check(path);
  }
}
function check(path) {
  const text = readFileSync(path, "utf8");
  const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  const name = relative(root, path);
  if (lines > MAX_LINES)
    offenders.push(`${name}: ${lines} lines (at most ${MAX_LINES}); split it by concern`);
  // Comments joined across their line breaks, so an excuse split over two lines is found too.
  const comments = text.replace(/\n\s*(\/\/|\*)\s*/g, " ");
  const excuse = comments.match(EXCUSE);
  if (excuse)
    offenders.push(
      `${name}: a comment excuses its size ("…${excuse[0]}…"); split the file instead`,
    );
}
walk(join(root, "src"));
if (offenders.length > 0) {
  console.error(
    `check:size: ${offenders.length} problem(s) in src/:\n${offenders.map((o) => `  ${o}`).join("\n")}`,
  );
  process.exit(1);
}
console.log(`check:size: every TypeScript file in src/ has at most ${MAX_LINES} lines`);
