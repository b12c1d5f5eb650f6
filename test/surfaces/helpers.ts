import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { http } from "@google-cloud/functions-framework";
import { getTestServer } from "@google-cloud/functions-framework/testing";
import express, { type RequestHandler } from "express";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import type { ClaimOutcome, LockBackend } from "../../src/core/port.js";
import type { HttpRequestLike, HttpResponseLike } from "../../src/surfaces/index.js";

export { captureLogger } from "../support/logger.js";

export async function listen(server: Server): Promise<{ url: string; close: () => Promise<void> }> {
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

export async function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = { "content-type": "application/json" },
): Promise<{ status: number; text: string }> {
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

/** A promise and its resolver, to hold a handler open while a second delivery arrives. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((done) => {
    open = done;
  });
  return { promise, open };
}

/** A request listener as idempotentHttp returns it. */
export type PushHandler = (req: HttpRequestLike, res: HttpResponseLike) => Promise<void>;

let registered = 0;
/**
 * The ways users mount idempotentHttp, by name: each serves a handler on a fresh loopback
 * server, whose close it adds to `closers`, and returns the URL to POST to.
 */
export function pushMounts(
  closers: (() => Promise<void>)[],
): Record<string, (fn: PushHandler) => Promise<string>> {
  const serve = async (server: Server, path = "") => {
    const s = await listen(server);
    closers.push(s.close);
    return `${s.url}${path}`;
  };
  const withExpress = (parser?: RequestHandler) => (fn: PushHandler) => {
    const app = express();
    if (parser) app.use(parser);
    app.post("/push", fn);
    return serve(createServer(app), "push");
  };
  return {
    "functions-framework http": (fn) => {
      const name = `mounted${++registered}`;
      http(name, fn);
      return serve(getTestServer(name));
    },
    "express json": withExpress(express.json()),
    "express raw": withExpress(express.raw({ type: "*/*" })),
    "express text": withExpress(express.text({ type: "*/*" })),
    "express without parser": withExpress(),
    "node:http": (fn) => serve(createServer((req, res) => void fn(req, res))),
  };
}

/**
 * A real InMemoryLock whose claims are counted: `held` is how many answered held so far, and
 * `onHeld(n)` runs on the n-th. A copy waiting for a holder claims again and again: its second
 * held answer is how a test knows it waits.
 */
export function watchedLock(onHeld: (n: number) => void = () => {}) {
  const inner = new InMemoryLock();
  const watched = {
    held: 0,
    claim: async (key: string, leaseMs: number, options?: object): Promise<ClaimOutcome> => {
      const outcome = await inner.claim(key, leaseMs, options);
      if (outcome.status === "held") onHeld(++watched.held);
      return outcome;
    },
    complete: inner.complete.bind(inner),
    release: inner.release.bind(inner),
  };
  return watched satisfies LockBackend;
}
