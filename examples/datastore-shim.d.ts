// Stand-in types for the datastore subpath until src/backends/datastore lands on this
// branch. TypeScript uses an ambient module only when no file resolves, so once the real
// module is merged this file is ignored; delete it then.
declare module "gcp-pubsub-idempotency/datastore" {
  import type { Claim, ClaimOutcome, LockBackend } from "gcp-pubsub-idempotency";
  export interface DatastoreLockOptions {
    datastore?: unknown;
    projectId?: string;
    namespace?: string;
    kind?: string;
    ttlMs?: number;
  }
  export class DatastoreLock implements LockBackend {
    constructor(options?: DatastoreLockOptions);
    claim(key: string, leaseMs: number): Promise<ClaimOutcome>;
    complete(claim: Claim): Promise<boolean>;
    release(claim: Claim): Promise<void>;
  }
}
