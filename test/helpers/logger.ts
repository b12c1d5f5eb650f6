import type { LogFields, Logger } from "../../src/index.js";

export interface LogLine {
  severity: "INFO" | "WARNING" | "ERROR";
  message: string;
  fields: LogFields;
}

/** A logger that keeps what it was told, so a test can assert on the lines. */
export function captureLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const push =
    (severity: LogLine["severity"]) =>
    (message: string, fields: LogFields = {}) => {
      lines.push({ severity, message, fields });
    };
  return { lines, info: push("INFO"), warn: push("WARNING"), error: push("ERROR") };
}
