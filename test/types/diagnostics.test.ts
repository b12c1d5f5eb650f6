// What the compiler tells a user who misspells an option (issue 28). TypeScript 5.9 lists
// every overload's error; TypeScript 7 shows the last overload's only, so the last one's
// must be about the misspelt name, not about a backend missing completeInTransaction.
import { describe, expect, it } from "vitest";
import { typecheckSnippets } from "../docs/typecheck.js";

const preamble = `
import type { Redis } from "ioredis";
import { idempotent, idempotentHttp, idempotentMessage, InMemoryLock, lock } from "gcp-pubsub-idempotency";
import { DatastoreLock } from "gcp-pubsub-idempotency/datastore";
import { RedisLock } from "gcp-pubsub-idempotency/redis";
declare const client: Redis;
const backend = new InMemoryLock();
const body = async () => {};
`;

const mistakes: [string, string][] = [
  ["idempotentHttp({ backend, lease: 60_000 }, body);", "'lease'"],
  ["idempotentHttp({ backend, ttlMs: 60_000 }, body);", "'ttlMs'"],
  ["idempotent({ backend, ttl: 60_000 }, body);", "'ttl'"],
  ["idempotentMessage({ backend, leaseMS: 1 }, body);", "'leaseMS'"],
  ['idempotentHttp({ backend, auth: { audiance: "x" } }, body);', "'audiance'"],
  ["lock('k', { backend, lease: 1 }, body);", "'lease'"],
  ['new RedisLock({ client, keyPrefix: "x" });', "'keyPrefix'"],
  ["new InMemoryLock({ ttl: 5 });", "'ttl'"],
  ['new DatastoreLock({ projectID: "p" });', "'projectID'"],
];

describe("a misspelt option's compile error names it", () => {
  const problems = typecheckSnippets(
    mistakes.map(([code], i) => ({ origin: `mistake ${i}`, code: `${preamble}${code}` })),
  );
  it.each(mistakes.map(([code, name], i) => ({ code, name, i })))(
    "$code: one error, whose last overload names $name",
    ({ name, i }) => {
      const mine = problems.filter((p) => p.startsWith(`mistake ${i} `));
      expect(mine).toHaveLength(1);
      // The last overload's elaboration (or the only error): what TypeScript 7 shows.
      const last = (mine[0] as string).split(/Overload \d+ of \d+/).at(-1) as string;
      expect(last).toContain(name);
      expect(last).not.toContain("completeInTransaction");
    },
  );
});
