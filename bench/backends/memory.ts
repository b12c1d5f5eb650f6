/** InMemoryLock; its floor is the same number of awaited Map operations. */
import { InMemoryLock } from "gcp-pubsub-idempotency";
import type { Settings } from "../runner.js";
import {
  type BackendBench,
  type Contender,
  check,
  KEYS,
  oursContender,
  seed,
  TTL_MS,
} from "../suite.js";

interface Entry {
  state: "claimed" | "done";
  fence: number;
}

/** One awaited Map call per round trip a store would make. */
function mapFloor(name: string, settings: Settings): Contender {
  const map = new Map<string, Entry>();
  for (let i = 0; i < settings.dupKeys; i++)
    map.set(KEYS.dup(i, settings), { state: "done", fence: 1 });
  map.set(KEYS.held, { state: "claimed", fence: 1 });
  const claim = async (key: string) => {
    const entry = map.get(key);
    if (entry === undefined) map.set(key, { state: "claimed", fence: 1 });
    return entry;
  };
  const update = async (key: string, state: Entry["state"]) => {
    const entry = map.get(key);
    if (entry !== undefined) entry.state = state;
  };
  return {
    name,
    role: "floor",
    ops: {
      first: async (i) => {
        const key = KEYS.first(name, i);
        check((await claim(key)) === undefined, "fresh key");
        await update(key, "done");
      },
      duplicate: async (i) => check((await claim(KEYS.dup(i, settings)))?.state === "done", "dup"),
      contention: async () => check((await claim(KEYS.held))?.state === "claimed", "held"),
      mutex: async (_i, w) => {
        const key = KEYS.mutex(name, w);
        await claim(key);
        await update(key, "claimed");
      },
    },
  };
}

export const memoryBench: BackendBench = {
  id: "memory",
  title: "InMemoryLock",
  async start(settings) {
    return {
      versions: `in-process Map, Node ${process.version}`,
      floorNote: "the same number of awaited Map operations (a get/set per round trip)",
      // A fresh lock per concurrency, so records of one cell do not pile up into the next.
      async open() {
        const backend = new InMemoryLock({ ttlMs: TTL_MS });
        await seed(backend, settings);
        return {
          contenders: [
            oursContender("ours", backend, settings, "floor"),
            mapFloor("floor", settings),
          ],
          close: async () => {},
        };
      },
      stop: async () => {},
    };
  },
};
