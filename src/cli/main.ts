// The `gcp-pubsub-idempotency` command: inspect, release, purge, doctor. Dispatches to the
// command, maps every failure to its exit code and a one-line message naming what is wrong.
import { BackendError, InvalidConfiguration, InvalidKey } from "../core/errors.js";
import { type Command, EXIT, helpText, parseArgs, UsageError, wantsHelp } from "./args.js";
import { doctorCommand } from "./doctor.js";
import { inspectCommand } from "./inspect.js";
import { type CliIo, writeJson } from "./output.js";
import { purgeCommand } from "./purge.js";
import { releaseCommand } from "./release.js";

const COMMANDS: readonly Command[] = [inspectCommand, releaseCommand, purgeCommand, doctorCommand];

function overview(): string {
  const width = Math.max(...COMMANDS.map((command) => command.spec.name.length));
  return (
    "Usage: gcp-pubsub-idempotency <command> [options]\n\n" +
    "Inspect and operate the records of gcp-pubsub-idempotency.\n\nCommands:\n" +
    COMMANDS.map((c) => `  ${c.spec.name.padEnd(width)}  ${c.summary}\n`).join("") +
    "\nRun gcp-pubsub-idempotency <command> --help for its options. Every command takes --json.\n" +
    "Exit codes: 0 done, 1 the answer is no, 2 a usage error, 3 the store or an API failed.\n"
  );
}

/** Run one command line; resolves to the exit code. Never rejects. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  const json = rest.includes("--json") && !rest.slice(0, rest.indexOf("--json")).includes("--");
  try {
    if (name === undefined || name === "--help" || name === "-h" || name === "help") {
      io.out(overview());
      return name === undefined ? EXIT.usage : EXIT.ok;
    }
    const command = COMMANDS.find((c) => c.spec.name === name);
    if (command === undefined) {
      throw new UsageError(
        `unknown command ${JSON.stringify(name.slice(0, 60))}: use ${COMMANDS.map((c) => c.spec.name).join(", ")}`,
      );
    }
    if (wantsHelp(rest)) {
      io.out(helpText(command));
      return EXIT.ok;
    }
    return await command.run(parseArgs(command.spec, rest), io);
  } catch (error) {
    const { exit, message } = failure(error);
    if (json) writeJson(io, { error: { message, exitCode: exit } });
    io.err(`gcp-pubsub-idempotency: ${message}\n`);
    return exit;
  }
}

/** A failure's exit code and its one-line message. */
function failure(error: unknown): { exit: number; message: string } {
  if (
    error instanceof UsageError ||
    error instanceof InvalidKey ||
    error instanceof InvalidConfiguration
  ) {
    return { exit: EXIT.usage, message: error.message };
  }
  if (error instanceof BackendError) return { exit: EXIT.failed, message: error.message };
  const message = error instanceof Error ? error.message : String(error);
  return { exit: EXIT.failed, message: message.replace(/\s+/g, " ") };
}
