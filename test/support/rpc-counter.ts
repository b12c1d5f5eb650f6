// An HTTP/2 proxy that counts the gRPC calls a Google client makes to an emulator, by method:
// point the client's *_EMULATOR_HOST at it. It counts what crosses the wire, whatever the
// client library does inside (sessions, retries, inline begins), so a path's round trips are
// measured, not argued. Plain-text HTTP/2 (h2c), as the emulators speak it; loopback only.
import {
  type ClientHttp2Session,
  connect,
  constants,
  createServer,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import type { AddressInfo } from "node:net";

export interface RpcCounter {
  /** host:port of the proxy, for *_EMULATOR_HOST. */
  readonly host: string;
  /** Calls since the last reset, by method name (the last segment of the gRPC path). */
  counts(): Record<string, number>;
  /** The total since the last reset. */
  total(): number;
  reset(): void;
  close(): Promise<void>;
}

/** Headers a proxy must not forward as they are: the connection's own. */
const HOP_HEADERS = new Set([":scheme", ":authority", "connection", "keep-alive"]);

function forwardable(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!HOP_HEADERS.has(name) && value !== undefined) out[name] = value;
  }
  return out;
}

export async function startRpcCounter(target: string): Promise<RpcCounter> {
  let counts = new Map<string, number>();
  let upstream: ClientHttp2Session | undefined;
  const session = (): ClientHttp2Session => {
    if (upstream === undefined || upstream.closed || upstream.destroyed) {
      upstream = connect(`http://${target}`);
      upstream.on("error", () => {});
    }
    return upstream;
  };

  const relay = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void => {
    const path = String(headers[":path"] ?? "");
    const method = path.slice(path.lastIndexOf("/") + 1);
    counts.set(method, (counts.get(method) ?? 0) + 1);
    const up = session().request({ ...forwardable(headers), ":authority": target });
    let trailers: OutgoingHttpHeaders = {};
    up.on("response", (responseHeaders, flags) => {
      const ended = (flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      // A trailers-only answer (a gRPC error with no message) ends with its headers.
      if (ended) stream.respond(forwardable(responseHeaders), { endStream: true });
      else stream.respond(forwardable(responseHeaders), { waitForTrailers: true });
    });
    up.on("trailers", (received) => {
      trailers = forwardable(received);
    });
    stream.on("wantTrailers", () => stream.sendTrailers(trailers));
    up.on("data", (chunk: Buffer) => {
      if (!stream.destroyed) stream.write(chunk);
    });
    up.on("end", () => {
      if (!stream.destroyed && !stream.headersSent) stream.respond({ ":status": 502 });
      if (!stream.destroyed) stream.end();
    });
    up.on("error", () => stream.destroy());
    stream.on("error", () => up.destroy());
    stream.on("close", () => {
      if (!up.closed) up.close();
    });
    stream.pipe(up);
  };

  const server = createServer();
  server.on("stream", relay);
  server.on("sessionError", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    counts: () => Object.fromEntries([...counts].sort(([a], [b]) => a.localeCompare(b))),
    total: () => [...counts.values()].reduce((sum, n) => sum + n, 0),
    reset: () => {
      counts = new Map();
    },
    close: () =>
      new Promise((resolve) => {
        upstream?.close();
        server.close(() => resolve());
        // Open client sessions would keep close() waiting.
        setTimeout(resolve, 1_000).unref();
      }),
  };
}
