// The body of a push request as it reaches the gateway: bytes, text, or what a framework's JSON
// body parser already made of it.
import { Buffer } from "node:buffer";
import { fail, isBytes, isObject, type Json, shown } from "./fields.js";

/** The most of a JSON.parse error a reason echoes: V8 quotes a few characters of the body. */
const PARSE_ERROR_CHARS = 100;

/**
 * The body as a JSON object when it is one (parsed, or JSON text or bytes); else undefined.
 * With `declared` (the body's JSON media type) a body that is not JSON is refused instead.
 */
export function jsonBody(body: unknown, declared?: string): Json | undefined {
  if (isObject(body)) return body;
  let json: string;
  if (typeof body === "string") json = body;
  else if (isBytes(body)) {
    // Undeclared, only bytes that start like an object are decoded: a large binary payload is not.
    if (declared === undefined) {
      const first = body.findIndex((b) => b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d);
      if (body[first] !== 0x7b) return undefined;
    }
    json = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8");
  } else if (body === undefined && declared !== undefined) json = "";
  else return undefined;
  if (declared === undefined && !json.trimStart().startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(json);
    return isObject(value) ? value : undefined;
  } catch (error) {
    if (declared === undefined) return undefined;
    const what = `the body is declared ${declared}`;
    if (json.trim() === "") fail(`${what} but is empty; ${ENVELOPE_SHAPE}`);
    const why = error instanceof Error ? error.message : String(error);
    const capped =
      why.length > PARSE_ERROR_CHARS ? `${why.slice(0, PARSE_ERROR_CHARS - 3)}...` : why;
    return fail(`${what} but is not valid JSON (${capped}); ${ENVELOPE_SHAPE}`);
  }
}

const ENVELOPE_SHAPE = "a Pub/Sub push is a JSON envelope { message, subscription }";

/**
 * The body's bytes: as received, a string as UTF-8, or an object a JSON body parser made as
 * its JSON text again (the same JSON, not byte for byte; mount the route without a parser,
 * or with `express.raw()`, where the exact bytes matter).
 */
export function bodyBytes(body: unknown): Buffer {
  if (body === undefined) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  if (isBytes(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (typeof body === "string") return Buffer.from(body, "utf8");
  let json: string | undefined;
  try {
    json = JSON.stringify(body);
  } catch {
    json = undefined;
  }
  if (json === undefined) fail(`the request body is ${shown(body)}, not data`);
  return Buffer.from(json, "utf8");
}
