import type { LogFields, Logger } from "../../src/index.js";

/** A logger that prints nothing: where the gateway's lines would only clutter the output. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

export interface LogLine {
  severity: "INFO" | "WARNING" | "ERROR";
  message: string;
  fields: LogFields;
}

/** A logger that keeps what it was told, so a test can assert on the lines. */
export function captureLogger(): Logger & {
  lines: LogLine[];
  /** The lines of one severity. */
  at: (severity: LogLine["severity"]) => LogLine[];
} {
  const lines: LogLine[] = [];
  const push =
    (severity: LogLine["severity"]) =>
    (message: string, fields: LogFields = {}) => {
      lines.push({ severity, message, fields });
    };
  return {
    lines,
    at: (severity) => lines.filter((line) => line.severity === severity),
    info: push("INFO"),
    warn: push("WARNING"),
    error: push("ERROR"),
  };
}
