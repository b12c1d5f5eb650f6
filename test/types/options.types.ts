// Compile-time checks of the option types, the mistakes a new user makes (issue 28). Not a
// vitest file: `npm run typecheck` compiles it with the project's tsconfig and again with
// test/types/tsconfig.json (strict + exactOptionalPropertyTypes, nothing else). Each
// `@ts-expect-error` line must stay an error; every other line must compile.
import type Database from "better-sqlite3";
import {
  type GatewayOptions,
  type HttpGatewayOptions,
  InMemoryLock,
  idempotent,
  idempotentHttp,
  idempotentMessage,
  type LockOptions,
  lock,
  lockInTransaction,
  mutex,
  type PubSubMessageLike,
} from "gcp-pubsub-idempotency";
import { DatastoreLock } from "gcp-pubsub-idempotency/datastore";
import { FirestoreLock } from "gcp-pubsub-idempotency/firestore";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
import { SpannerLock } from "gcp-pubsub-idempotency/spanner";
import { SqlLock } from "gcp-pubsub-idempotency/sql";
import type { Redis } from "ioredis";

declare const client: Redis;
declare const db: Database.Database;
declare const audience: string | undefined;
declare const maybe: number | undefined;
const backend = new InMemoryLock();
const sql = new SqlLock({ client: db });
const body = async () => {};

// --- misspelt options are compile errors, on the property itself ---------------------------

// @ts-expect-error `lease` is not an option (leaseMs)
idempotentHttp({ backend, lease: 60_000 }, body);
// @ts-expect-error the ttl is the backend's option
idempotentHttp({ backend, ttlMs: 60_000 }, body);
// @ts-expect-error the ttl is the backend's option
idempotent({ backend, ttl: 60_000 }, body);
// @ts-expect-error `timeout` is not an option (requestTimeoutMs)
idempotentMessage({ backend, timeout: 5 }, body);
// @ts-expect-error a typo inside auth
idempotentHttp({ backend, auth: { audiance: "https://x.test" } }, body);
// @ts-expect-error `lease` is not an option of lock()
lock("k", { backend, lease: 1 }, body);
// @ts-expect-error nor of mutex()
mutex("k", { backend, leaseMS: 1 }, body);
// @ts-expect-error nor of lockInTransaction()
lockInTransaction("k", { backend: sql, lease: 1 }, async () => {});
// @ts-expect-error a typo in the heartbeat
lock("k", { backend, heartbeat: { every: 1_000 } }, body);
// @ts-expect-error RedisLock's option is `prefix`
new RedisLock({ client, keyPrefix: "orders:" });
// @ts-expect-error InMemoryLock's option is `ttlMs`
new InMemoryLock({ ttl: 60_000 });
// @ts-expect-error DatastoreLock's option is `projectId`
new DatastoreLock({ projectID: "my-project" });
// @ts-expect-error a typo in retry
new FirestoreLock({ retry: { attempt: 3 } });
// @ts-expect-error SqlLock's option is `table`
new SqlLock({ client: db, tabel: "x" });
// @ts-expect-error SpannerLock's option is `instanceId`
new SpannerLock({ projectId: "p", instance: "i", databaseId: "d" });
// @ts-expect-error a typo inside deadLetter
idempotentMessage({ backend, deadLetter: { maxDeliveryAttempt: 10 } }, body);
const noReq = { maxDeliveryAttempts: 10, onExhausted: (m: PubSubMessageLike) => m.id };
// @ts-expect-error onExhausted gets the surface's input: a push, not a pull Message
idempotentHttp({ backend, deadLetter: noReq }, body);
// @ts-expect-error transaction mode needs a backend with transactions
idempotentHttp({ backend, transaction: true }, async (_message, _tx) => {});

// --- the correct spellings compile, in both modes --------------------------------------------

idempotentHttp({ backend, leaseMs: 60_000, requestTimeoutMs: 60_000 }, body);
idempotentHttp({ backend, auth: { audience: "https://x.test" } }, async (message, req, res) => {
  message.text();
  req.headers;
  res.statusCode = 204;
});
idempotentHttp({ backend: sql, transaction: true }, async (_message, tx) => {
  tx.prepare("SELECT 1");
});
idempotent({ backend: sql, transaction: true }, async (_event, tx) => {
  tx.prepare("SELECT 1");
});
idempotentMessage({ backend }, async (message: PubSubMessageLike) => message.id);
idempotentHttp(
  {
    backend,
    deadLetter: {
      maxDeliveryAttempts: 10,
      onExhausted: (push, r) => push.message.messageId + r.outcome,
    },
  },
  body,
);
idempotentMessage(
  { backend, deadLetter: { maxDeliveryAttempts: 10, onExhausted: (m) => m.id } },
  body,
);
idempotent({ backend: sql, transaction: true, deadLetter: { maxDeliveryAttempts: 5 } }, body);
lock("k", { backend, leaseMs: 1_000, heartbeat: { everyMs: 100 } }, body);
new RedisLock({ client, prefix: "orders:", ttlMs: 60_000 });
new DatastoreLock({ projectId: "my-project", retry: { attempts: 3 } });

// --- every optional option takes `undefined` (exactOptionalPropertyTypes) ---------------------

idempotentHttp({ backend, auth: audience ? { audience } : undefined }, body);
idempotentHttp({ backend, maxBodyBytes: maybe, requestTimeoutMs: maybe, key: undefined }, body);
idempotentMessage({ backend, onDuplicate: undefined, allowUnguarded: undefined }, body);
idempotentMessage({ backend, deadLetter: undefined }, body);
idempotentHttp(
  { backend, deadLetter: { maxDeliveryAttempts: 10, onExhausted: undefined, maxWaitMs: maybe } },
  body,
);
idempotent({ backend, transaction: undefined, telemetry: undefined }, body);
lock(
  "k",
  { backend, leaseMs: maybe, waitMs: maybe, heartbeat: undefined, logger: undefined },
  body,
);
lock("k", { backend, heartbeat: { everyMs: maybe, maxHoldMs: maybe } }, body);
lock("k", { backend, telemetry: { recordKey: undefined, projectId: undefined } }, body);
new InMemoryLock({ ttlMs: maybe, now: undefined });
new RedisLock({ client, prefix: undefined, ttlMs: maybe });
new SqlLock({ client: db, table: undefined, dialect: undefined, ttlMs: maybe });
new DatastoreLock({ projectId: undefined, namespace: undefined, retry: undefined });
new DatastoreLock({ retry: { attempts: maybe, maxElapsedMs: maybe } });
new FirestoreLock({ collection: undefined, firestore: undefined, ttlMs: maybe });
new SpannerLock({ database: undefined, projectId: "p", instanceId: "i", databaseId: "d" });
const options: LockOptions = { backend, leaseMs: maybe };
const gateway: GatewayOptions<PubSubMessageLike> = { ...options, key: undefined };
const http: HttpGatewayOptions = { ...options, auth: undefined, maxBodyBytes: undefined };
idempotentMessage(gateway, body);
idempotentHttp(http, body);
