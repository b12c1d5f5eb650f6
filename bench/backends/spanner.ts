/**
 * SpannerLock on the official Spanner emulator, started for the run in its own process group
 * and ended after. Its floor is the very transactions the backend runs, made with the client
 * alone: per call one read-write transaction of a query (begun inline) and a commit carrying
 * one mutation, or a rollback when there is nothing to write; aborted ones retried by the
 * same policy. So the ratio is what the backend adds on top of the client.
 *
 * The emulator runs one read-write transaction at a time and aborts the others, so figures
 * above one in flight would measure its aborts and the retries' backoff: only one is run.
 */
import { Spanner } from "@google-cloud/spanner";
import { SpannerLock } from "gcp-pubsub-idempotency/spanner";
import { isGoogleTransient } from "../../src/backends/google/grpc.js";
import { resolveRetry } from "../../src/backends/google/retry-options.js";
import { withRetry } from "../../src/core/retry.js";
import { PROJECT } from "../../test/support/gcloud-emulator.js";
import { freshDatabase, startSpannerEmulator } from "../../test/support/spanner-emulator.js";
import type { Settings } from "../runner.js";
import {
  type BackendBench,
  type Contender,
  check,
  KEYS,
  LEASE_MS,
  seed,
  TTL_MS,
} from "../suite.js";
import { onEmulator } from "./emulated.js";

type Database = ReturnType<ReturnType<Spanner["instance"]>["database"]>;
const TABLE = "records";
const RETRY = { attempts: 100, maxElapsedMs: 60_000 };
const READ =
  "SELECT UNIX_MILLIS(CURRENT_TIMESTAMP()) AS now, r.state, r.fencing_id FROM (SELECT 1 AS one) AS o LEFT JOIN records AS r ON r.key = @key";

/** SpannerLock's transactions, raw: read the record and the clock, then commit a write or roll back. */
function spannerFloor(name: string, database: Database, settings: Settings): Contender {
  const policy = resolveRetry(RETRY);
  /** One transaction on `key`: `write` says what to store given the row read, or nothing. */
  const transact = (
    key: string,
    write: (row: { now: number; state: unknown }) => object | undefined,
  ) =>
    withRetry(policy, isGoogleTransient, async () => {
      const [tx] = await database.getTransaction();
      try {
        const [rows] = await tx.run({ sql: READ, params: { key }, json: true });
        const row = rows[0] as { now: number; state: unknown };
        const values = write(row);
        if (values === undefined) {
          await tx.rollback();
          return row.state;
        }
        tx.upsert(TABLE, { key, token: "t", ...values });
        await tx.commit();
        return row.state;
      } catch (error) {
        await tx.rollback().catch(() => undefined);
        throw error;
      } finally {
        tx.end();
      }
    });
  const claimed = (now: number, fencingId: number) => ({
    state: "claimed",
    fencing_id: fencingId,
    lease_expires_at: now + LEASE_MS,
    expires_at: new Date(now + LEASE_MS + TTL_MS),
  });
  // Whole rows, as SpannerLock writes them (an upsert names every NOT NULL column).
  const done = (now: number) => ({ ...claimed(now, 1), state: "done" });
  return {
    name,
    role: "floor",
    ops: {
      first: async (i) => {
        const key = KEYS.first(name, i);
        check((await transact(key, ({ now }) => claimed(now, 1))) === null, "fresh key absent");
        await transact(key, ({ now }) => done(now));
      },
      duplicate: (i) => transact(KEYS.dup(i, settings), () => undefined),
      contention: () => transact(KEYS.held, () => undefined),
      // A released key: the claim and the release are a transaction each.
      mutex: async (_i, w) => {
        const key = KEYS.mutex(name, w);
        await transact(key, ({ now }) => claimed(now, 2));
        await transact(key, ({ now }) => ({ ...claimed(now, 3), lease_expires_at: now }));
      },
    },
  };
}

export const spannerBench: BackendBench = {
  id: "spanner",
  title: "Cloud Spanner (emulator)",
  async start(settings) {
    const emulator = await startSpannerEmulator();
    const spanner = new Spanner({ projectId: PROJECT });
    return onEmulator(
      emulator,
      settings,
      async () => spanner.close(),
      async () => {
        const database = await freshDatabase(spanner, []);
        const backend = new SpannerLock({ database, table: TABLE, ttlMs: TTL_MS, retry: RETRY });
        await backend.ensureSchema();
        await seed(backend, settings, 1);
        return {
          backend,
          others: [spannerFloor("floor", database, settings)],
          emulatorName: "Cloud Spanner emulator",
          packages: ["@google-cloud/spanner"],
          floorNote:
            "SpannerLock's own transactions made with the client alone: every call is a query (beginning the transaction inline) then a commit with one mutation, or a rollback; a first delivery is two such transactions, a duplicate or held key one with a rollback, a mutex cycle on a released key two",
          // One in flight only: the emulator serializes read-write transactions, so more
          // would measure its aborts and our backoff, not the backend.
          onlyConcurrency: 1,
          stop: async () => {
            await database.close();
          },
        };
      },
    );
  },
};
