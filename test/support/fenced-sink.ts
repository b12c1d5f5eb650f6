// The effect of the network-fault storm's bodies: an HTTP endpoint on loopback, in the test
// process (never behind the fault proxy), that keeps one effect per message. Fenced, it
// refuses (409) a write whose fence is below the highest it has seen for that message and
// replaces on an equal or higher one: what a fenced resource does with claim.fencingId. The
// control appends every write, as a resource that ignores the fence would.
import { createServer, type Server } from "node:http";

export interface SinkWrite {
  readonly id: string;
  readonly fence: number;
  /** Who wrote: the consumer's pid and its delivery, so one holder's retry is told apart. */
  readonly holder: string;
}

export interface FencedSink {
  readonly url: string;
  /** The writes standing per message: one when fenced, every one when appending. */
  readonly effects: Map<string, SinkWrite[]>;
  /** Writes refused as stale. */
  refused(): number;
  /** Messages two holders wrote with one fence: a fence handed out twice. */
  readonly sharedFences: string[];
  close(): Promise<void>;
}

export async function startSink(mode: "fenced" | "append"): Promise<FencedSink> {
  const effects = new Map<string, SinkWrite[]>();
  const sharedFences: string[] = [];
  let refused = 0;
  const accept = (write: SinkWrite): boolean => {
    const standing = effects.get(write.id);
    if (mode === "append" || standing === undefined) {
      effects.set(write.id, [...(standing ?? []), write]);
      return true;
    }
    const current = standing[0]!;
    if (write.fence < current.fence) {
      refused++;
      return false;
    }
    if (write.fence === current.fence && write.holder !== current.holder) {
      sharedFences.push(write.id);
    }
    effects.set(write.id, [write]);
    return true;
  };
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      const write = JSON.parse(body) as SinkWrite;
      response.statusCode = accept(write) ? 204 : 409;
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/`,
    effects,
    refused: () => refused,
    sharedFences,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
