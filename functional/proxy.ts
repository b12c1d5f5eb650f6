/**
 * The round-robin proxy the push subscriptions target: it hands each push to the next live
 * worker and records what came back. A push whose `fanout` attribute is n goes to n
 * instances at once (the concurrent duplicate deliveries Pub/Sub makes when a redelivery
 * races the original); the emulator gets the first instance's answer, the others are extra
 * deliveries, recorded as such.
 *
 * The emulator sometimes stops redelivering a message it has pushed and seen nacked (twice
 * in a row, seen here; the real service keeps redelivering until the ack or the dead-letter
 * policy). Standing in for that redelivery, the proxy re-sends the last push body of a
 * nacked message (same messageId and subscription) when the emulator has not pushed it
 * again for `repushAfterMs`; each such push is marked `repushed` and counted apart.
 */
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import type { Delivery } from "./records.js";

export interface PushProxy {
  readonly url: string;
  readonly deliveries: Delivery[];
  close(): Promise<void>;
}

export interface ProxyOptions {
  /** Re-send a nacked push the emulator has not redelivered for this long; 0 = never. */
  repushAfterMs: number;
  /** Scenarios whose nacked pushes may be re-sent (not the dead-letter one). */
  repushScenarios: ReadonlySet<string>;
}

/** The last push of one message on one subscription, kept to re-send it. */
interface LastPush {
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  at: number;
  status: number | undefined;
}

interface PushFields {
  messageId: string;
  subscription: string;
  scenario: string;
  fanout: number;
}

function pushFields(body: Buffer): PushFields {
  try {
    const push = JSON.parse(body.toString("utf8")) as {
      subscription?: string;
      message?: { messageId?: string; attributes?: Record<string, string> };
    };
    const attributes = push.message?.attributes ?? {};
    return {
      messageId: push.message?.messageId ?? "",
      subscription: (push.subscription ?? "").split("/").pop() ?? "",
      scenario: attributes.scenario ?? "",
      fanout: Number(attributes.fanout ?? "1") || 1,
    };
  } catch {
    return { messageId: "", subscription: "", scenario: "", fanout: 1 };
  }
}

/** Forward one request; resolves to the worker's status, or 502 when it died on us. */
function forward(
  port: number,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      { host: "127.0.0.1", port, path, method: "POST", headers, agent: false },
      (res) => {
        res.resume();
        res.once("end", () => resolve(res.statusCode ?? 502));
        // A worker killed mid-answer ends the response without "end": that is a 502, and
        // the emulator must hear it, or it waits on this push (and its push window) forever.
        res.once("close", () => resolve(res.complete ? (res.statusCode ?? 502) : 502));
      },
    );
    req.setTimeout(FORWARD_TIMEOUT_MS, () => req.destroy());
    req.once("error", () => resolve(502));
    req.end(body);
  });
}

/** Longer than any body here (the slowest holds 12 s); a hung worker is a 502 after it. */
const FORWARD_TIMEOUT_MS = 30_000;

export async function startProxy(
  ports: readonly number[],
  isUp: (index: number) => boolean,
  options: ProxyOptions,
): Promise<PushProxy> {
  const deliveries: Delivery[] = [];
  const last = new Map<string, LastPush>();
  let next = 0;
  /** The next n live workers, round robin; all workers when none is up (each answers 502). */
  const pick = (n: number): number[] => {
    const chosen: number[] = [];
    for (let i = 0; i < ports.length && chosen.length < n; i++) {
      const index = (next + i) % ports.length;
      if (isUp(index)) chosen.push(index);
    }
    next = (next + 1) % ports.length;
    return chosen.length > 0 ? chosen : [next];
  };
  /** Forward one push to the next worker(s); resolves to the status the sender hears. */
  const deliver = async (
    path: string,
    headers: Record<string, string>,
    body: Buffer,
    repushed: boolean,
  ): Promise<number> => {
    const startedAt = Date.now();
    const fields = pushFields(body);
    const id = `${fields.subscription}/${fields.messageId}`;
    const entry: LastPush = { path, headers, body, at: startedAt, status: undefined };
    last.set(id, entry);
    const targets = pick(fields.fanout);
    const statuses = await Promise.all(
      targets.map(async (worker, i) => {
        const port = ports[worker] ?? 0;
        const status = await forward(port, path, headers, body);
        deliveries.push({
          ...fields,
          worker,
          status,
          answered: i === 0,
          startedAt,
          t: Date.now(),
          ...(repushed ? { repushed } : {}),
        });
        return status;
      }),
    );
    const status = statuses[0] ?? 502;
    // A later push of the same message may have replaced the entry meanwhile.
    if (last.get(id) === entry) {
      entry.status = status;
      entry.at = Date.now();
    }
    return status;
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const headers = {
      "content-type": req.headers["content-type"] ?? "application/json",
      "content-length": String(body.byteLength),
    };
    res.statusCode = await deliver(req.url ?? "/", headers, body, false);
    res.end();
  });
  const repushTimer =
    options.repushAfterMs > 0
      ? setInterval(() => {
          const now = Date.now();
          for (const [id, entry] of last) {
            if (entry.status === undefined) continue; // in flight
            if (entry.status >= 200 && entry.status < 300) {
              last.delete(id);
              continue;
            }
            if (now - entry.at < options.repushAfterMs) continue;
            if (!options.repushScenarios.has(pushFields(entry.body).scenario)) continue;
            entry.status = undefined;
            void deliver(entry.path, entry.headers, entry.body, true);
          }
        }, 500)
      : undefined;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    deliveries,
    close: () =>
      new Promise<void>((done) => {
        if (repushTimer !== undefined) clearInterval(repushTimer);
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}
