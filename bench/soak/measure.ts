// One reading of the server process at rest (nothing in flight): the heap after a forced
// collection, the resident set, and the resources that keep the event loop alive.

export interface Reading {
  readonly heapMiB: number;
  readonly rssMiB: number;
  /**
   * process.getActiveResourcesInfo() less the connections the load opened: the server, the
   * Redis socket, the IPC pipe, timers. Each type counted in `handleTypes` (connections too).
   */
  readonly handles: number;
  readonly handleTypes: Readonly<Record<string, number>>;
  /** Open HTTP connections: the load's keep-alive sockets, its agent's choice, not ours. */
  readonly connections: number;
  /** CPU time (user + system) of this process since the previous reading, µs. */
  readonly cpuUs: number;
}

const MiB = 1024 * 1024;

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) {
    throw new Error("soak: run node with --expose-gc (npm run soak does), or the heap is noise");
  }
  gc();
}

let cpu = process.cpuUsage();

/** Read the process at rest; `connections` is how many HTTP connections the server holds. */
export async function measure(connections: number): Promise<Reading> {
  const used = process.cpuUsage(cpu);
  // Twice, a turn apart: what the first collection freed may finalize objects the second
  // then frees (weak maps, finalizers of closed sockets).
  collect();
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  const { heapUsed, rss } = process.memoryUsage();
  const handleTypes: Record<string, number> = {};
  const resources = process.getActiveResourcesInfo();
  for (const type of resources) handleTypes[type] = (handleTypes[type] ?? 0) + 1;
  cpu = process.cpuUsage();
  return {
    heapMiB: heapUsed / MiB,
    rssMiB: rss / MiB,
    handles: resources.length - connections,
    handleTypes,
    connections,
    cpuUs: used.user + used.system,
  };
}
