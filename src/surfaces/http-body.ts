// The push body of a request: what a framework already parsed or kept, else the stream, read
// under a size limit.
import { Buffer } from "node:buffer";
import { InvalidConfiguration } from "../core/errors.js";
import { describe } from "../core/validate.js";
import { DEFAULT_MAX_BODY_BYTES, type HttpRequestLike } from "./http-types.js";

/** `maxBodyBytes`, checked when the function is built. */
export function maxBodyBytesOption(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_BODY_BYTES;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidConfiguration(
      `options.maxBodyBytes must be a positive whole number of bytes, got ${describe(value)}`,
    );
  }
  return value;
}

/** The body is larger than `maxBodyBytes`: answered 413. */
export class BodyTooLarge extends Error {}

function isEmptyPlainObject(value: unknown): boolean {
  return (
    value !== null &&
    typeof value === "object" &&
    Object.getPrototypeOf(value) === Object.prototype &&
    Object.keys(value).length === 0
  );
}

/** {@link heldBody}'s answer when the body is still in the request's stream. */
export const UNREAD: unique symbol = Symbol("unread");

/**
 * The push body a framework already holds: the bytes it kept (`rawBody`) or what it parsed;
 * {@link UNREAD} when it is still in the stream.
 */
export function heldBody(req: HttpRequestLike): unknown {
  const { rawBody, body } = req;
  if (rawBody instanceof Uint8Array) return rawBody;
  const iterate = req[Symbol.asyncIterator];
  const unread = typeof iterate === "function" && !req.readableEnded;
  // Express 4's body parsers leave `{}` on a request whose content type they skip, with the
  // stream unread: the data is still in the stream.
  if (body !== undefined && !(unread && isEmptyPlainObject(body))) return body;
  return unread ? UNREAD : undefined;
}

/** The body read from the request's stream, under a size limit. */
export async function readStream(req: HttpRequestLike, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  // Keep draining past the limit rather than destroying the stream, so the 413 reaches the client.
  for await (const chunk of req as AsyncIterable<unknown>) {
    const bytes =
      typeof chunk === "string"
        ? Buffer.from(chunk, "utf8")
        : chunk instanceof Uint8Array
          ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
          : Buffer.alloc(0);
    size += bytes.byteLength;
    if (size > limit) tooLarge = true;
    if (!tooLarge) chunks.push(bytes);
  }
  if (tooLarge) throw new BodyTooLarge(`the push body exceeds ${limit} bytes`);
  return Buffer.concat(chunks);
}
