import type { LogFields, Logger } from "./types.js";

type Severity = "INFO" | "WARNING" | "ERROR";

function write(severity: Severity, message: string, fields: LogFields | undefined): void {
  // One JSON object per line is what Cloud Logging parses into a structured entry.
  const entry = { severity, message, ...fields };
  const line = `${safeStringify(entry)}\n`;
  if (severity === "INFO") process.stdout.write(line);
  else process.stderr.write(line);
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === "bigint") return v.toString();
      if (v instanceof Error) return { name: v.name, message: v.message };
      return v;
    });
  } catch {
    return JSON.stringify({ severity: "ERROR", message: "unserializable log entry" });
  }
}

/**
 * The default logger: one Cloud Logging JSON line per event, with a `severity` field
 * (`INFO` to stdout; `WARNING` and `ERROR` to stderr). Wrap it to add fields of your own.
 *
 * @example
 * ```ts
 * import { jsonLogger, type Logger } from "gcp-pubsub-idempotency";
 *
 * const service = { service: "orders" };
 * const logger: Logger = {
 *   info: (message, fields) => jsonLogger.info(message, { ...service, ...fields }),
 *   warn: (message, fields) => jsonLogger.warn(message, { ...service, ...fields }),
 *   error: (message, fields) => jsonLogger.error(message, { ...service, ...fields }),
 * };
 * ```
 */
export const jsonLogger: Logger = {
  info: (message, fields) => write("INFO", message, fields),
  warn: (message, fields) => write("WARNING", message, fields),
  error: (message, fields) => write("ERROR", message, fields),
};

/** Text of an unknown thrown value, for a log field. */
export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
