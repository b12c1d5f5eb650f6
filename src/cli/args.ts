// Command-line arguments are hostile input: every argument is checked here, once, and every
// refusal is a UsageError (exit 2) that names the argument and says what is allowed.
import { MAX_TTL_MS } from "../core/constants.js";
import type { CliIo } from "./output.js";

/** A command line that cannot be run as written: exit code 2, with a one-line reason. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** One option a command takes: `--name VALUE`, or a flag (`--name`) when `value` is absent. */
export interface OptionSpec {
  readonly name: string;
  /** The placeholder shown in the help (`URL`, `DURATION`); absent for a flag. */
  readonly value?: string;
  readonly help: string;
}

/** What a command takes: its options and how many positional arguments. */
export interface CommandSpec {
  readonly name: string;
  readonly options: readonly OptionSpec[];
  /** How the positionals are named in messages, e.g. `KEY`. */
  readonly positional: string;
  readonly minPositionals: number;
  readonly maxPositionals: number;
}

/** A command line split by its spec: positionals, and each option given, by name. */
export interface ParsedArgs {
  readonly positionals: readonly string[];
  /** A value option's text, or `true` for a flag. */
  readonly options: ReadonlyMap<string, string | true>;
}

const HELP_FLAGS = new Set(["--help", "-h"]);

/** True when `args` asks for help anywhere before a `--`. */
export function wantsHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === "--") return false;
    if (HELP_FLAGS.has(arg)) return true;
  }
  return false;
}

/**
 * Split `args` (after the command name) by `spec`: `--name VALUE`, `--name=VALUE`, flags,
 * positionals, and `--` before positionals that begin with `-`. Refuses an unknown option, a
 * repeated one, a flag given a value, a value option without one, an empty value, a NUL
 * character anywhere, and too few or too many positionals.
 */
export function parseArgs(spec: CommandSpec, args: readonly string[]): ParsedArgs {
  const positionals: string[] = [];
  const options = new Map<string, string | true>();
  const byName = new Map(spec.options.map((option) => [option.name, option]));
  let onlyPositionals = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    assertNoNul(arg, i + 1);
    if (onlyPositionals || arg === "-" || !arg.startsWith("-")) {
      positionals.push(arg);
      continue;
    }
    if (arg === "--") {
      onlyPositionals = true;
      continue;
    }
    const equals = arg.indexOf("=");
    const name = equals === -1 ? arg : arg.slice(0, equals);
    const option = byName.get(name);
    if (option === undefined || !name.startsWith("--")) {
      throw new UsageError(
        `unknown option ${shown(name)} for ${spec.name}; see gcp-pubsub-idempotency ${spec.name} --help`,
      );
    }
    if (options.has(name)) throw new UsageError(`${name} is given twice`);
    if (option.value === undefined) {
      if (equals !== -1) throw new UsageError(`${name} takes no value`);
      options.set(name, true);
      continue;
    }
    let value: string;
    if (equals !== -1) value = arg.slice(equals + 1);
    else {
      if (i + 1 >= args.length) throw new UsageError(`${name} needs a value (${option.value})`);
      value = args[++i] as string;
      assertNoNul(value, i + 1);
    }
    if (value === "") throw new UsageError(`${name} needs a non-empty value (${option.value})`);
    options.set(name, value);
  }
  if (positionals.length < spec.minPositionals) {
    throw new UsageError(
      `${spec.name} needs ${spec.minPositionals === spec.maxPositionals ? "one" : "at least one"} ${spec.positional}; see gcp-pubsub-idempotency ${spec.name} --help`,
    );
  }
  if (positionals.length > spec.maxPositionals) {
    throw new UsageError(
      spec.maxPositionals === 0
        ? `${spec.name} takes no arguments, got ${shown(positionals[0] as string)}`
        : `${spec.name} takes at most ${spec.maxPositionals} ${spec.positional}, got ${positionals.length}`,
    );
  }
  return { positionals, options };
}

/** A value option's text, or undefined when it was not given. */
export function optionText(args: ParsedArgs, name: string): string | undefined {
  const value = args.options.get(name);
  return typeof value === "string" ? value : undefined;
}

/** True when the flag was given. */
export function flag(args: ParsedArgs, name: string): boolean {
  return args.options.get(name) === true;
}

function assertNoNul(arg: string, position: number): void {
  const at = arg.indexOf("\0");
  if (at !== -1) {
    throw new UsageError(`argument ${position} contains a NUL character (U+0000) at index ${at}`);
  }
}

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const DURATION = /^(?:\d{1,12}(?:ms|s|m|h|d))+$/;
const DURATION_PART = /(\d{1,12})(ms|s|m|h|d)/g;
const MILLISECONDS = /^\d{1,12}$/;
const DURATION_FORMS = "300s, 5m, 1h, 1h30m, 250ms or a plain number of milliseconds (300000)";

/**
 * A duration as whole milliseconds: one or more number-unit pairs such as `300s`, `5m`, `1h`,
 * `1h30m` or `250ms` (units ms, s, m, h, d), or a plain number, which is milliseconds like
 * the library's `leaseMs` and `ttlMs`. Above 0 and at most {@link MAX_TTL_MS}; anything else
 * (a fraction, a space, a sign, an unknown unit) is a UsageError naming the option and the
 * forms it takes. The one parser of every duration option.
 */
export function parseDuration(name: string, text: string): number {
  if (text.length > 40 || !(DURATION.test(text) || MILLISECONDS.test(text))) {
    throw new UsageError(
      `${name} must be a duration such as ${DURATION_FORMS}, got ${shown(text)}`,
    );
  }
  let ms = 0;
  if (MILLISECONDS.test(text)) ms = Number(text);
  else {
    for (const [, amount, unit] of text.matchAll(DURATION_PART)) {
      ms += Number(amount) * (UNIT_MS[unit as string] as number);
    }
  }
  if (ms === 0 || ms > MAX_TTL_MS) {
    throw new UsageError(
      `${name} must be above 0 and at most 10 years (${MAX_TTL_MS} ms), got ${shown(text)}`,
    );
  }
  return ms;
}

/** A whole number from `min` to `max`, written in plain digits; else a UsageError naming the option. */
export function parseWhole(name: string, text: string, min: number, max: number): number {
  const n = /^\d{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= min && n <= max)) {
    throw new UsageError(
      `${name} must be a whole number from ${min} to ${max}, got ${shown(text)}`,
    );
  }
  return n;
}

/**
 * Whole milliseconds as the duration text {@link parseDuration} reads back to the same number:
 * `15m`, `1h30m`, `5m250ms`; the largest units first, none left out.
 */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms <= 0) return `${ms}ms`;
  let rest = ms;
  let text = "";
  for (const unit of ["d", "h", "m", "s", "ms"] as const) {
    const size = UNIT_MS[unit] as number;
    if (rest >= size) {
      text += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return text;
}

/** An argument as a message quotes it: JSON-escaped (no control character reaches the terminal), cut at 60. */
export function shown(text: string): string {
  const cut = text.length > 60 ? `${text.slice(0, 60)}…` : text;
  return JSON.stringify(cut);
}

/** Exit codes, the same for every command. */
export const EXIT = {
  /** Done as asked. */
  ok: 0,
  /** The answer is no: a doctor rule is broken, or release freed nothing. */
  no: 1,
  /** The command line is wrong (UsageError, an invalid key or option value). */
  usage: 2,
  /** The store or an API failed, or a driver is missing. */
  failed: 3,
} as const;

/** One command: its arguments, its help, and what it does (resolving to its exit code). */
export interface Command {
  readonly spec: CommandSpec;
  /** One line, for the list of commands. */
  readonly summary: string;
  /** The usage line's arguments, e.g. `KEY...`. */
  readonly usage: string;
  /** What the command does, for its --help, a few lines. */
  readonly description: string;
  run(args: ParsedArgs, io: CliIo): Promise<number>;
}

/** The options every command takes. */
export const COMMON_OPTIONS: readonly OptionSpec[] = [
  { name: "--json", help: "write one JSON document to stdout instead of text" },
  { name: "--help", help: "show this help (also -h)" },
];

/** A command's --help text, its options listed from its spec. */
export function helpText(command: Command): string {
  const { spec } = command;
  const label = (option: OptionSpec) =>
    option.value === undefined ? option.name : `${option.name} ${option.value}`;
  const width = Math.max(...spec.options.map((option) => label(option).length));
  const options = spec.options
    .map((option) => `  ${label(option).padEnd(width)}  ${option.help}\n`)
    .join("");
  return (
    `Usage: gcp-pubsub-idempotency ${spec.name} [options] ${command.usage}\n\n` +
    `${command.description}\n\nOptions:\n${options}\n` +
    "Exit codes: 0 done, 1 the answer is no, 2 a usage error, 3 the store or an API failed.\n"
  );
}
