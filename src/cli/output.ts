// What a command reads and writes besides the store: the terminal, the environment, and how
// times, durations and keys are shown in it.
import { createInterface } from "node:readline";

/** The process as a command sees it; tests pass their own. */
export interface CliIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  out(text: string): void;
  err(text: string): void;
  /** True when stderr is a terminal: progress lines go there. */
  readonly errIsTerminal: boolean;
  /** True when stdin is a terminal: only then can a command ask a question. */
  readonly inIsTerminal: boolean;
  /** Ask on stderr, read one line of stdin; undefined at end of input. */
  ask(question: string): Promise<string | undefined>;
}

/** The real process's streams. */
export function processIo(): CliIo {
  return {
    env: process.env,
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    errIsTerminal: process.stderr.isTTY === true,
    inIsTerminal: process.stdin.isTTY === true,
    ask: (question) =>
      new Promise((resolve) => {
        const lines = createInterface({ input: process.stdin, output: process.stderr });
        let answered = false;
        lines.question(question, (answer) => {
          answered = true;
          lines.close();
          resolve(answer);
        });
        lines.once("close", () => {
          if (!answered) resolve(undefined);
        });
      }),
  };
}

/** One JSON document on stdout: what `--json` promises, for every outcome of every command. */
export function writeJson(io: CliIo, value: unknown): void {
  io.out(`${JSON.stringify(value, null, 2)}\n`);
}

/** `1h 4m 3s`, `250ms`: a span of time for a person, to the second above a second. */
export function formatSpan(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${abs}ms`;
  let seconds = Math.floor(abs / 1_000);
  const parts: string[] = [];
  for (const [unit, size] of [
    ["d", 86_400],
    ["h", 3_600],
    ["m", 60],
  ] as const) {
    if (seconds >= size) {
      parts.push(`${Math.floor(seconds / size)}${unit}`);
      seconds %= size;
    }
  }
  if (seconds > 0 || parts.length === 0) parts.push(`${seconds}s`);
  return parts.join(" ");
}

/** An epoch-ms time and how far it is from `now` (the store's clock): `… (in 14m 2s)`. */
export function formatMoment(at: number, now: number): string {
  const relative = at >= now ? `in ${formatSpan(at - now)}` : `${formatSpan(now - at)} ago`;
  return `${new Date(at).toISOString()} (${relative})`;
}

/** A key as the terminal shows it: as it is when printable, JSON-quoted otherwise. */
export function shownKey(key: string): string {
  return /^[\x21-\x7e]+$/.test(key) ? key : JSON.stringify(key);
}

/** Rows of `label  value`, the labels padded to one column. */
export function table(rows: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}\n`).join("");
}
