// A consumer process for the network-fault storm (test/faults/network-storm.test.ts): it takes
// messages from its parent (as Pub/Sub would deliver them) and runs each through lock() on a
// store it reaches through the parent's fault proxy. The body pauses a little (work of varying
// length), then writes its effect to the parent's sink with the claim's fence; a write the sink
// refuses as stale throws, so the delivery is nacked. On "stop" it waits for what it holds to
// settle, reports its counts and how many deliveries never settled (a hang), and exits 0: any
// other exit is a crash.
import { Redis } from "ioredis";
import pg from "pg";
import type { DatastoreLike } from "../../src/backends/datastore/index.js";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import { RedisLock } from "../../src/backends/redis/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import { Duplicate, InProgress, type LockBackend, type Logger, lock } from "../../src/index.js";
import {
  type ChildCounts,
  noCounts,
  type StormChildConfig,
  type StormDelivery,
  type StormReply,
  type StormStore,
} from "./network-storm-protocol.js";

const config = JSON.parse(process.argv[2] ?? "{}") as StormChildConfig;
const counts: ChildCounts = noCounts();
const ALERTS: Record<string, keyof ChildCounts> = {
  fenced_out: "fencedOut",
  complete_failed: "completeFailed",
  release_failed: "releaseFailed",
};
const count = (fields: Record<string, unknown> | undefined) => {
  const name = ALERTS[String(fields?.outcome)];
  if (name !== undefined) counts[name]++;
};
const logger: Logger = { info() {}, warn: (_m, f) => count(f), error: (_m, f) => count(f) };

/** The Redis backend, on ioredis's defaults (it resends a command whose reply was lost). */
function redis(): LockBackend {
  const client = new Redis(config.target, { retryStrategy: () => 20 });
  let drops = 0;
  client.on("error", () => counts.clientErrors++);
  client.on("close", () => drops++);
  const backend = new RedisLock({ client, prefix: config.scope });
  // A claim sent on a live connection that dropped before its reply, and still won: the
  // proxy cuts replies, never requests, so ioredis resent it and the claim.own row answered.
  return {
    claim: async (key, leaseMs) => {
      const sent = client.status === "ready" ? drops : undefined;
      const outcome = await backend.claim(key, leaseMs);
      if (outcome.status === "won" && sent !== undefined && drops !== sent) counts.recognised++;
      return outcome;
    },
    complete: (claim) => backend.complete(claim),
    release: (claim) => backend.release(claim),
  };
}

function postgres(): LockBackend {
  const pool = new pg.Pool({ connectionString: config.target, max: 4 });
  // An idle client whose connection is reset reports it here; the pool drops it.
  pool.on("error", () => counts.clientErrors++);
  return new SqlLock({ client: pool, table: config.scope });
}

/**
 * The Datastore backend over a client that notes the token of every write whose call failed,
 * and counts a later read that finds such a token in a claimed record: the write had landed,
 * and the claim's retry recognises it as its own.
 */
async function datastore(): Promise<LockBackend> {
  // Imported here: the driver takes seconds to load, which the other stores' consumers skip.
  const { Datastore } = await import("@google-cloud/datastore");
  const ds = new Datastore({ projectId: config.target });
  const lost = new Set<string>();
  const seen = (entity: unknown) => {
    const record = entity as { state?: unknown; token?: unknown } | undefined;
    if (record?.state === "claimed" && lost.delete(String(record.token))) counts.recognised++;
  };
  const watched: DatastoreLike = {
    key: (options) => ds.key(options),
    namespace: undefined,
    KEY: ds.KEY,
    get: async (key) => {
      const found = await ds.get(key);
      seen(found[0]);
      return found;
    },
    insert: async (entity) => {
      try {
        return await ds.insert(entity);
      } catch (error) {
        lost.add(String(entity.data.token));
        throw error;
      }
    },
    transaction: () => {
      const tx = ds.transaction();
      let token: string | undefined;
      return {
        run: () => tx.run(),
        get: async (key) => {
          const found = await tx.get(key);
          seen(found[0]);
          return found;
        },
        save: (entity) => {
          token = String(entity.data.token);
          tx.save(entity);
        },
        delete: (key) => tx.delete(key),
        commit: async () => {
          try {
            return await tx.commit();
          } catch (error) {
            if (token !== undefined) lost.add(token);
            throw error;
          }
        },
        rollback: () => tx.rollback(),
      };
    },
    createQuery: (namespaceOrKind, kind) =>
      kind === undefined ? ds.createQuery(namespaceOrKind) : ds.createQuery(namespaceOrKind, kind),
    runQuery: (query) => ds.runQuery(query),
  };
  return new DatastoreLock({ datastore: watched, namespace: config.scope });
}

const backends: Record<StormStore, () => LockBackend | Promise<LockBackend>> = {
  redis,
  postgres,
  datastore,
};
const backend = await backends[config.store]();
const options = { backend, leaseMs: config.leaseMs, logger };
let holder = 0;

/** The effect: the sink keeps it when the fence is not below the highest it has seen. */
async function write(id: string, fencingId: number): Promise<void> {
  const response = await fetch(config.sinkUrl, {
    method: "POST",
    body: JSON.stringify({ id, fence: fencingId, holder: `${process.pid}:${++holder}` }),
  });
  await response.arrayBuffer();
  if (response.status === 409) {
    counts.refused++;
    throw new Error(`the sink refused fence ${fencingId} of ${id}: a later holder wrote`);
  }
  if (!response.ok) throw new Error(`the sink answered ${response.status}`);
}

async function handle(id: string): Promise<StormReply> {
  try {
    await lock(id, options, async (claim) => {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * config.bodyMs));
      counts.bodies++;
      await write(id, claim.fencingId);
    });
    return { id, outcome: "ran" };
  } catch (error) {
    if (error instanceof Duplicate) return { id, outcome: "duplicate" };
    if (error instanceof InProgress) return { id, outcome: "held" };
    return { id, outcome: "failed" };
  }
}

const inFlight = new Set<Promise<void>>();
process.on("message", (delivery: StormDelivery) => {
  if ("stop" in delivery) {
    void stop();
    return;
  }
  const settled = handle(delivery.id).then((reply) => {
    inFlight.delete(settled);
    process.send?.(reply);
  });
  inFlight.add(settled);
});

async function stop(): Promise<void> {
  const deadline = new Promise((resolve) => setTimeout(resolve, config.drainMs).unref());
  await Promise.race([Promise.all(inFlight), deadline]);
  const reply: StormReply = { stopped: true, counts, stuck: inFlight.size };
  process.send?.(reply, () => process.exit(0));
}

process.send?.({ ready: true } satisfies StormReply);
