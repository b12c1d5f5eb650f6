import type { LogFields, Logger } from "./types.js";
import { describe } from "./validate.js";

type Severity = "INFO" | "WARNING" | "ERROR";

function write(severity: Severity, message: string, fields: LogFields | undefined): void {
  // One JSON object per line is what Cloud Logging parses into a structured entry.
  const line = `${safeStringify(severity, message, fields)}\n`;
  if (severity === "INFO") process.stdout.write(line);
  else process.stderr.write(line);
}

function safeStringify(severity: Severity, message: string, fields: LogFields | undefined): string {
  try {
    return JSON.stringify({ severity, message, ...fields }, (_key, v: unknown) => {
      if (typeof v === "bigint") return v.toString();
      if (v instanceof Error) return { name: v.name, message: v.message };
      return v;
    });
  } catch {
    return JSON.stringify({ severity, message: String(message), unserializableFields: true });
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

/**
 * The message a delivery's log lines are about, as its surface read it: a push envelope,
 * an unwrapped push's headers, a CloudEvent or a pull `Message`. Fields it lacks are
 * absent; a verb called outside a surface has none.
 */
export interface MessageRef {
  readonly messageId?: string | undefined;
  readonly subscription?: string | undefined;
  readonly deliveryAttempt?: number | undefined;
}

/**
 * The fields of every log line about a delivery, in one order: `key`, `messageId`,
 * `subscription`, `deliveryAttempt`, `outcome`, `reason`, then the line's own extras. A field
 * with no value for this message (no key resolved yet, no subscription on a pull message, no
 * dead-letter policy) is left out, never set to undefined: see {@link LogFields}. Every
 * surface line and every verb line goes through here, so the shape cannot drift apart.
 */
export function deliveryFields(
  outcome: string,
  key: string | undefined,
  about: MessageRef | undefined,
  reason?: string,
  extra?: LogFields,
): LogFields {
  const fields: LogFields = {};
  if (key !== undefined && key !== "") fields.key = key;
  if (about !== undefined) {
    const { messageId, subscription, deliveryAttempt } = about;
    if (messageId !== undefined && messageId !== "") fields.messageId = messageId;
    if (subscription !== undefined && subscription !== "") fields.subscription = subscription;
    if (deliveryAttempt !== undefined) fields.deliveryAttempt = deliveryAttempt;
  }
  fields.outcome = outcome;
  if (reason !== undefined && reason !== "") fields.reason = reason;
  if (extra !== undefined) {
    for (const name of Object.keys(extra)) {
      if (extra[name] !== undefined) fields[name] = extra[name];
    }
  }
  return fields;
}

/**
 * Text of any thrown value, for a log field. Total: it never throws and never runs more of
 * the value's code than reading `name` and `message` of an Error, each guarded.
 */
export function errorText(error: unknown): string {
  try {
    if (error instanceof Error) {
      const { name, message } = error;
      const n = typeof name === "string" ? name : "Error";
      return typeof message === "string" && message !== "" ? `${n}: ${message}` : n;
    }
  } catch {
    // A Proxy or a throwing getter: fall through to a rendering that runs none of its code.
  }
  if (typeof error === "string") return error;
  return `non-Error thrown: ${describe(error)}`;
}

/** The stack of an Error when it can be read as a string; undefined otherwise. Total. */
export function errorStack(error: unknown): string | undefined {
  try {
    if (!(error instanceof Error)) return undefined;
    const { stack } = error;
    return typeof stack === "string" ? stack : undefined;
  } catch {
    return undefined;
  }
}

const guarded = new WeakMap<Logger, Logger>();
let complained = false;

/**
 * The logger as the verbs and surfaces call it: a logger observes, it never decides, so a
 * throw (or a rejected promise) from it is swallowed, with one line to stderr per process.
 * Wrapped once per logger object and cached, so the hot path allocates nothing.
 */
export function guardLogger(logger: Logger): Logger {
  if (logger === jsonLogger) return safeJsonLogger;
  let safe = guarded.get(logger);
  if (safe === undefined) {
    const call =
      (level: keyof Logger) =>
      (message: string, fields?: LogFields): void => {
        try {
          const result: unknown = logger[level](message, fields);
          if (isThenable(result)) result.then(undefined, loggerFailed);
        } catch (error) {
          loggerFailed(error);
        }
      };
    safe = { info: call("info"), warn: call("warn"), error: call("error") };
    guarded.set(logger, safe);
  }
  return safe;
}

/** The default logger can fail too (a closed stdout): the same rule holds. */
const safeJsonLogger: Logger = {
  info: (message, fields) => quietly(() => write("INFO", message, fields)),
  warn: (message, fields) => quietly(() => write("WARNING", message, fields)),
  error: (message, fields) => quietly(() => write("ERROR", message, fields)),
};

function quietly(run: () => void): void {
  try {
    run();
  } catch (error) {
    loggerFailed(error);
  }
}

function loggerFailed(error: unknown): void {
  if (complained) return;
  complained = true;
  try {
    process.stderr.write(
      `gcp-pubsub-idempotency: the logger threw (${errorText(error)}); its lines are dropped, the message is still handled\n`,
    );
  } catch {
    // Nowhere left to say it.
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  try {
    return (
      value !== null &&
      (typeof value === "object" || typeof value === "function") &&
      typeof (value as { then?: unknown }).then === "function"
    );
  } catch {
    return false;
  }
}

/** Test hook: let the next logger failure write its stderr line again. */
export function resetLoggerComplaint(): void {
  complained = false;
}
