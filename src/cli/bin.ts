#!/usr/bin/env node
// The executable: run the command line, then let the process end with its exit code.
import { runCli } from "./main.js";
import { processIo } from "./output.js";

void runCli(process.argv.slice(2), processIo()).then((code) => {
  process.exitCode = code;
  // A driver that keeps a socket or timer open must not keep the command from ending; the
  // timer keeps nothing alive itself (unref), so in the usual case stdout drains and Node ends.
  setTimeout(() => process.exit(code), 2_000).unref();
});
