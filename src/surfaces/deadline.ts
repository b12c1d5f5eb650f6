// The watch on a push whose client gives up before we answer, and the signal that joins it
// to the lease's.
import type { LogFields, Logger } from "../core/types.js";

/** The least of an event emitter the client watch needs: `node:http`'s req and res have it. */
interface Emitter {
  once?(event: string, listener: () => void): unknown;
}

/**
 * Watch a `node:http`-like request for a client that gives up before we answer: Pub/Sub at
 * its ack deadline, the platform at the request timeout. The response's `close` before
 * `end()` means the connection went; `aborted` on the request covers a client that left
 * while sending the body. The request's own `close` is no such sign: since Node.js 16 it
 * fires once the body has been read. One WARNING line, then the signal aborts; the
 * handler decides what to do with it, and the lock settles the claim as for any outcome.
 * Objects without `once` (in-process test doubles) are not watched: undefined, and no
 * allocation.
 */
export function watchClient(
  req: Emitter,
  res: Emitter & { readonly writableEnded?: boolean },
  startedAt: number,
  logger: Logger,
  fields: () => LogFields,
): AbortSignal | undefined {
  let onRes: boolean;
  let onReq: boolean;
  try {
    onRes = typeof res.once === "function";
    onReq = typeof req.once === "function";
  } catch {
    return undefined; // a hostile getter: unwatched, and the request is still answered
  }
  if (!onRes && !onReq) return undefined;
  const controller = new AbortController();
  const gone = (): void => {
    // Runs inside the emitter's emit: a throw here would be the server's uncaught exception.
    try {
      if (controller.signal.aborted || res.writableEnded === true) return;
      const elapsedMs = Date.now() - startedAt;
      logger.warn(
        `the client went away after ${elapsedMs} ms, before the answer; the handler's signal is aborted and the message may be redelivered`,
        { ...fields(), outcome: "client_gone", elapsedMs },
      );
      controller.abort(new Error(`the client went away after ${elapsedMs} ms`));
    } catch {
      // A response whose state cannot be read: leave the signal as it is.
    }
  };
  try {
    if (onRes) res.once?.("close", gone);
    if (onReq) req.once?.("aborted", gone);
  } catch {
    // An emitter that refuses listeners leaves the request unwatched, not unanswered.
  }
  return controller.signal;
}

/**
 * One signal that aborts when either does, with the first one's reason; `dispose` drops
 * the listeners once the handler settled. (`AbortSignal.any` needs Node.js 20.3.)
 */
export function eitherSignal(
  first: AbortSignal,
  second: AbortSignal,
): { signal: AbortSignal; dispose: () => void } {
  if (first.aborted) return { signal: first, dispose: () => {} };
  if (second.aborted) return { signal: second, dispose: () => {} };
  const controller = new AbortController();
  const onFirst = () => controller.abort(first.reason);
  const onSecond = () => controller.abort(second.reason);
  first.addEventListener("abort", onFirst, { once: true });
  second.addEventListener("abort", onSecond, { once: true });
  return {
    signal: controller.signal,
    dispose: () => {
      first.removeEventListener("abort", onFirst);
      second.removeEventListener("abort", onSecond);
    },
  };
}
