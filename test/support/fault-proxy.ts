// A TCP fault proxy for tests (no dependency but node:net): it listens on a free loopback port
// and forwards each connection to a target, and the test changes what the network does while
// clients use it. Latency delays every chunk (order kept); resetMidReply cuts the next reply
// from the server after a few bytes with a TCP reset, after the server acted on the request (a
// lost reply); blackhole is a partition: nothing is forwarded either way on existing or new
// connections, no FIN, no RST, so clients see a half-open connection; heal ends it and sends
// what was held, as TCP's retransmissions would after a partition shorter than their timeout.
import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";

export type Direction = "up" | "down" | "both";

/** What the proxy did, for the storm's table. */
export interface FaultProxyStats {
  connections: number;
  /** Replies cut by resetMidReply. */
  resets: number;
  /** Chunks held by a partition and sent at heal. */
  heldChunks: number;
}

export interface FaultProxy {
  /** 127.0.0.1:port, where clients connect instead of the target. */
  readonly host: string;
  readonly port: number;
  /**
   * Delay each chunk by `ms`: client→server ("up"), server→client ("down") or both; with
   * `only`, on the connections it picks (numbered from 1 in the order they were accepted)
   * and no others: one slow path among fast ones.
   */
  latency(ms: number, direction?: Direction, only?: (connection: number) => boolean): void;
  /**
   * Cut the next server→client chunk after `bytes` (default: half of it, at least 1) and
   * reset the client's socket; the server's socket is closed too. Resolves when it fired.
   */
  resetMidReply(bytes?: number): Promise<void>;
  /** A partition: stop forwarding anything, both ways, on every connection, old and new. */
  blackhole(): void;
  /**
   * End the partition and the latency; held data goes on, in order. `severed`: the partition
   * cost the connections it caught (a NAT or load balancer forgot them): their held data is
   * dropped and they stay silent for good, no FIN, no RST; only new connections work.
   */
  heal(options?: { severed?: boolean }): void;
  stats(): FaultProxyStats;
  /** Close the listener and every connection. */
  close(): Promise<void>;
}

/** One direction of one connection: chunks wait here for their time, in order. */
interface Lane {
  /** The connection's number, from 1. */
  readonly connection: number;
  readonly from: Socket;
  readonly to: () => Socket | undefined;
  readonly direction: "up" | "down";
  queue: { chunk: Buffer; due: number }[];
  timer: NodeJS.Timeout | undefined;
  /** Cut by resetMidReply, or severed by a partition: nothing more goes through. */
  cut: boolean;
}

export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  const delay = { up: 0, down: 0 };
  let slowOnly: ((connection: number) => boolean) | undefined;
  const delayOf = (l: Lane) =>
    slowOnly === undefined || slowOnly(l.connection) ? delay[l.direction] : 0;
  let partitioned = false;
  let pendingReset: { bytes: number | undefined; fired: () => void } | undefined;
  const stats: FaultProxyStats = { connections: 0, resets: 0, heldChunks: 0 };
  const lanes = new Set<Lane>();
  const sockets = new Set<Socket>();
  /** Connections accepted during a partition: their upstream is dialled at heal. */
  const waiting: (() => void)[] = [];

  const pump = (lane: Lane): void => {
    if (lane.timer !== undefined) return;
    while (lane.queue.length > 0 && !partitioned) {
      const head = lane.queue[0]!;
      const wait = head.due - Date.now();
      if (wait > 0) {
        lane.timer = setTimeout(() => {
          lane.timer = undefined;
          pump(lane);
        }, wait);
        return;
      }
      const to = lane.to();
      if (to === undefined) return; // upstream not dialled yet: sent once it is
      lane.queue.shift();
      if (lane.direction === "down" && pendingReset !== undefined) {
        cut(lane, to, head.chunk);
        return;
      }
      if (!to.destroyed) to.write(head.chunk);
    }
  };

  /** Send the first bytes of `chunk`, then reset the client and close the server side. */
  const cut = (lane: Lane, client: Socket, chunk: Buffer): void => {
    const reset = pendingReset!;
    pendingReset = undefined;
    const bytes = Math.max(1, Math.min(chunk.length - 1, reset.bytes ?? chunk.length >> 1));
    lane.queue = [];
    stats.resets++;
    lane.cut = true;
    // The reset a moment after the bytes: sent together, the client's kernel may report a
    // plain end of stream instead of ECONNRESET.
    client.write(chunk.subarray(0, bytes), () =>
      setTimeout(() => {
        client.resetAndDestroy();
        lane.from.destroy();
        reset.fired();
      }, 5),
    );
  };

  const lane = (
    connection: number,
    from: Socket,
    to: () => Socket | undefined,
    direction: "up" | "down",
  ): Lane => {
    const l: Lane = { connection, from, to, direction, queue: [], timer: undefined, cut: false };
    lanes.add(l);
    from.on("data", (chunk: Buffer) => {
      if (l.cut) return;
      // Never earlier than the chunk before it: a stream stays in order when latency drops.
      const last = l.queue.at(-1)?.due ?? 0;
      l.queue.push({ chunk, due: Math.max(Date.now() + delayOf(l), last) });
      if (partitioned) stats.heldChunks++;
      pump(l);
    });
    return l;
  };

  const server: Server = createServer((client) => {
    const connection = ++stats.connections;
    sockets.add(client);
    let upstream: Socket | undefined;
    const up = lane(connection, client, () => upstream, "up");
    const dial = () => {
      if (client.destroyed) return;
      upstream = tcpConnect(target.port, target.host);
      sockets.add(upstream);
      const down = lane(connection, upstream, () => client, "down");
      upstream.on("connect", () => pump(up));
      upstream.on("error", () => client.resetAndDestroy());
      upstream.on("close", () => {
        sockets.delete(upstream!);
        lanes.delete(down);
        // A server that closed: the client hears it once what was queued for it is sent.
        const finish = () => {
          if (down.cut) return; // the client gets its reset instead
          if (down.queue.length > 0 || partitioned) setTimeout(finish, 5);
          else client.end();
        };
        finish();
      });
    };
    client.on("error", () => upstream?.destroy());
    client.on("close", () => {
      sockets.delete(client);
      lanes.delete(up);
      upstream?.destroy();
    });
    if (partitioned) waiting.push(dial);
    else dial();
  });
  server.on("error", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the proxy has no port");

  return {
    host: `127.0.0.1:${address.port}`,
    port: address.port,
    latency(ms, direction = "both", only) {
      if (direction !== "down") delay.up = ms;
      if (direction !== "up") delay.down = ms;
      slowOnly = only;
    },
    resetMidReply(bytes) {
      return new Promise((fired) => {
        pendingReset = { bytes, fired };
      });
    },
    blackhole() {
      partitioned = true;
      for (const l of lanes) {
        if (l.timer !== undefined) clearTimeout(l.timer);
        l.timer = undefined;
      }
    },
    heal(options = {}) {
      partitioned = false;
      delay.up = 0;
      delay.down = 0;
      if (options.severed === true) {
        // Silent for good: what they hold or send is never forwarded, nor is their closing.
        for (const l of lanes) {
          l.cut = true;
          l.queue = [];
        }
        waiting.length = 0;
        return;
      }
      for (const dial of waiting.splice(0)) dial();
      for (const l of lanes) pump(l);
    },
    stats: () => ({ ...stats }),
    async close() {
      for (const l of lanes) if (l.timer !== undefined) clearTimeout(l.timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
