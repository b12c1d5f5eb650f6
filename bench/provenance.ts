/**
 * Which tree a run measured: the commit (`git rev-parse HEAD`) and whether the work tree had
 * uncommitted changes (`git status --porcelain` non-empty), read once when the run starts.
 * Every file a run writes carries {@link provenanceLine}, so a published figure can be traced
 * to the code that produced it, or is marked loudly as not reproducible from any commit.
 */
import { execFileSync } from "node:child_process";

export interface Provenance {
  /** The full commit hash, or undefined when git could not tell. */
  commit: string | undefined;
  /** `git status --porcelain` lines; empty for a clean tree, undefined when git could not tell. */
  changes: string[] | undefined;
}

/** Reads the commit and the work tree's state of the repository at `root`. */
export function readProvenance(root: string): Provenance {
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  let commit: string | undefined;
  let changes: string[] | undefined;
  try {
    commit = git("rev-parse", "HEAD").trim() || undefined;
  } catch {
    commit = undefined;
  }
  try {
    changes = git("status", "--porcelain")
      .split("\n")
      .filter((line) => line.trim() !== "");
  } catch {
    changes = undefined;
  }
  return { commit, changes };
}

/** Whether the figures can be reproduced from the named commit alone. */
export const reproducible = (p: Provenance): boolean =>
  p.commit !== undefined && p.changes !== undefined && p.changes.length === 0;

/**
 * The line every generated file carries: the commit, and in bold capitals when the tree had
 * uncommitted changes (up to five of the changed paths named) or git could not tell.
 */
export function provenanceLine(p: Provenance): string {
  const commit =
    p.commit === undefined
      ? "an unknown commit (`git rev-parse HEAD` failed)"
      : `commit \`${p.commit}\``;
  if (p.changes === undefined) {
    return `**Run from ${commit}; whether the tree had UNCOMMITTED CHANGES is unknown (\`git status --porcelain\` failed): these figures may not be reproducible from any commit.**`;
  }
  if (p.changes.length > 0) {
    const paths = p.changes.map((line) => line.slice(3).trim());
    const named = paths
      .slice(0, 5)
      .map((path) => `\`${path}\``)
      .join(", ");
    const more = paths.length > 5 ? ` and ${paths.length - 5} more` : "";
    return `**Run from ${commit} WITH UNCOMMITTED CHANGES (${paths.length} path(s): ${named}${more}): these figures are not reproducible from any commit.**`;
  }
  if (p.commit === undefined) {
    return `**Run from ${commit}: these figures cannot be tied to a commit.**`;
  }
  return `Run from ${commit}, a clean tree (no uncommitted changes): check it out and rerun the command to reproduce.`;
}
