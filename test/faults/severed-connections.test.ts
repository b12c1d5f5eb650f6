// A partition that costs the connections it caught (a NAT or a load balancer forgot them):
// after it, those connections stay silent for good, no FIN, no RST, and a call waiting on one
// waits until something in the client gives up on it. What each driver needs for lock() to
// carry on, and what it does without: docs/faults.md, "Network faults".
import { Datastore } from "@google-cloud/datastore";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, describe, expect, it, vi } from "vitest";
import { DatastoreLock } from "../../src/backends/datastore/index.js";
import { KEEPALIVE_SETTINGS } from "../../src/backends/google/grpc.js";
import { RedisLock } from "../../src/backends/redis/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import { BackendError, lock } from "../../src/index.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { silentLogger } from "../support/logger.js";
import { findOrStartRedis } from "../support/redis.js";
import { emulatorOrSkip, startOrSkip } from "../support/required.js";
import {
  expectOneRunThroughSevering,
  QUICK_PINGS,
  severedMidClaim,
  within,
} from "../support/severing.js";
import { startPostgres } from "../support/sql.js";

/** The settings of every Datastore client made in this file, the lock's own included. */
const made = vi.hoisted((): Record<string, unknown>[] => []);
vi.mock("@google-cloud/datastore", async (importOriginal) => {
  const real = await importOriginal<typeof import("@google-cloud/datastore")>();
  class Datastore extends real.Datastore {
    constructor(options?: ConstructorParameters<typeof real.Datastore>[0]) {
      made.push({ ...options });
      super(options);
    }
  }
  return { ...real, Datastore };
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const run = `severed-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

const redis = await startOrSkip("Redis", findOrStartRedis);
const postgres = await startOrSkip("PostgreSQL", startPostgres);
const emulator = await emulatorOrSkip("datastore");
afterAll(async () => {
  await redis?.stop();
  await postgres?.drop();
  await emulator?.stop();
});

describe.skipIf(!redis)("severed connections: Redis (ioredis)", () => {
  it("with socketTimeout the client reconnects, resends the claim, and it wins by its token", async () => {
    const proxy = await startFaultProxy({ host: redis!.host, port: redis!.port });
    const client = new Redis(proxy.port, "127.0.0.1", { socketTimeout: 500 });
    client.on("error", () => {}); // the socket timeout, expected
    try {
      await expectOneRunThroughSevering(proxy, new RedisLock({ client, prefix: `${run}:` }));
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });

  it("on ioredis's defaults the call waits on the dead connection (no timeout of its own)", async () => {
    const proxy = await startFaultProxy({ host: redis!.host, port: redis!.port });
    const client = new Redis(proxy.port, "127.0.0.1");
    client.on("error", () => {});
    try {
      const backend = new RedisLock({ client, prefix: `${run}-defaults:` });
      await lock("warm-up", { backend, logger: silentLogger }, () => {});
      const { pending } = await severedMidClaim(proxy, backend, "order-1", () => {});
      expect(await within(pending, 1_500)).toBe("pending");
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });
});

describe.skipIf(!postgres)("severed connections: PostgreSQL (pg)", () => {
  it("with query_timeout the claim fails, the pool drops the connection, the redelivery runs", async () => {
    const proxy = await startFaultProxy({ host: "127.0.0.1", port: 5432 });
    const url = new URL(postgres!.url);
    url.port = String(proxy.port);
    const pool = new pg.Pool({ connectionString: url.toString(), max: 2, query_timeout: 500 });
    pool.on("error", () => {});
    try {
      const backend = new SqlLock({ client: pool, table: "severed_records" });
      await backend.ensureSchema();
      let bodies = 0;
      const body = () => {
        bodies++;
      };
      const { pending } = await severedMidClaim(proxy, backend, "order-1", body, 300);
      // The claim landed but its answer never came: it fails before any work, so the message
      // is nacked; the redelivery finds the lease lapsed and runs the body, once.
      await expect(pending).rejects.toBeInstanceOf(BackendError);
      await sleep(300);
      await lock("order-1", { backend, leaseMs: 60_000, logger: silentLogger }, body);
      expect(bodies).toBe(1);
    } finally {
      await pool.end();
      await proxy.close();
    }
  });

  it("on pg's defaults the call waits on the dead connection (no timeout of its own)", async () => {
    const proxy = await startFaultProxy({ host: "127.0.0.1", port: 5432 });
    const url = new URL(postgres!.url);
    url.port = String(proxy.port);
    const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
    pool.on("error", () => {});
    try {
      const backend = new SqlLock({ client: pool, table: "severed_defaults" });
      await backend.ensureSchema();
      const { pending } = await severedMidClaim(proxy, backend, "order-1", () => {});
      expect(await within(pending, 1_500)).toBe("pending");
    } finally {
      void pool.end().catch(() => {}); // its dead client never answers the goodbye
      await proxy.close();
    }
  });
});

describe.skipIf(!emulator)("severed connections: Datastore emulator (gRPC)", () => {
  it("with gRPC keepalive the channel reconnects and the retried claim wins", async () => {
    const [host, port] = emulator!.host.split(":");
    const proxy = await startFaultProxy({ host: host!, port: Number(port) });
    const datastore = new Datastore({
      projectId: PROJECT,
      apiEndpoint: proxy.host,
      ...QUICK_PINGS,
    });
    try {
      await expectOneRunThroughSevering(proxy, new DatastoreLock({ datastore, namespace: run }));
    } finally {
      await closeClients(datastore);
      await proxy.close();
    }
  }, 60_000);
});

describe.skipIf(!emulator)("severed connections: the client DatastoreLock makes", () => {
  // On the driver's defaults a severed channel is never replaced: each call, the next ones
  // too, ended in DEADLINE_EXCEEDED after 60 s on the same dead connection (measured: 60 s,
  // then 120 s for the next call). Too slow to run here; the lock's own client now pings.
  it("has gRPC keepalive set, so a silently dead connection is noticed and replaced", async () => {
    const namespace = `${run}-made`;
    const backend = new DatastoreLock({ projectId: PROJECT, namespace });
    try {
      await lock("order-1", { backend, logger: silentLogger }, () => {});
      expect(made.at(-1)).toMatchObject(KEEPALIVE_SETTINGS);
    } finally {
      await backend.close();
    }
  });
});

/** The Datastore class has no close(): its gRPC clients, made on demand, do. */
async function closeClients(datastore: Datastore): Promise<void> {
  const { clients_ } = datastore as unknown as {
    clients_: Map<string, { close(): Promise<void> }>;
  };
  await Promise.all([...clients_.values()].map((client) => client.close()));
}
