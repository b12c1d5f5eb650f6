// Mistakes a newcomer makes, each refused by the compiler under both TypeScript majors.
import { InMemoryLock, idempotentHttp, lock } from "gcp-pubsub-idempotency";

const backend = new InMemoryLock();
// @ts-expect-error `lease` is not an option (leaseMs is)
idempotentHttp({ backend, lease: 60_000 }, async () => {});
// @ts-expect-error `lease` is not an option of lock either
await lock("k", { backend, lease: 60_000 }, async () => {});
// @ts-expect-error a key function must return a string or undefined
idempotentHttp({ backend, key: () => 42 }, async () => {});
