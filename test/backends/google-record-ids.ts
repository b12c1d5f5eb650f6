// Where DatastoreLock, FirestoreLock and SpannerLock keep a key's record (the recordIds
// option, DECISIONS.md 19), written once and run on each emulator by datastore.test.ts,
// firestore.test.ts and spanner.test.ts: spread ids by default, 0.1's plain ids on request, and
// the upgrade between them, read back from the store itself.
import { describe, expect, it } from "vitest";
import type { RecordIdLayout } from "../../src/backends/google/record-ids.js";
import type { InspectedRecord, LockBackend } from "../../src/core/port.js";
import { won } from "../support/claims.js";

/** A record as a store holds it, written raw: what 0.1 left behind, or a test's own. */
export interface RawRecord {
  state: "claimed" | "done";
  fencingId: number;
  leaseExpiresAt: number;
  /** Epoch ms. */
  expiresAt: number;
  token: string;
}

/** A Google lock, with the operator calls these cases use. */
export type GoogleLockUnderTest = LockBackend & {
  readonly recordIds: RecordIdLayout;
  inspect(key: string): Promise<InspectedRecord | undefined>;
  purgeExpired(): Promise<number>;
};

export interface RecordIdsFixture {
  /** A namespace, collection or table no other test uses. */
  freshScope(): string;
  /** A lock on the file's shared client in `scope`. */
  lock(scope: string, recordIds?: RecordIdLayout): GoogleLockUnderTest;
  /** The id each record in `scope` is stored under (key name, document id, key column). */
  storedIds(scope: string): Promise<string[]>;
  /** Store `record`, the record of `key`, at `id` in `scope`, as 0.1 wrote records. */
  put(scope: string, id: string, key: string, record: RawRecord): Promise<void>;
  /** The id of `key` under `layout`, as the store's exported encoder gives it. */
  id(key: string, layout: "spread" | "plain"): string;
}

const HOUR = 3_600_000;

export function describeRecordIdCases(f: RecordIdsFixture): void {
  describe("record ids", () => {
    it("spread by default: rising keys land apart, each always on the same record", async () => {
      const scope = f.freshScope();
      const backend = f.lock(scope);
      expect(backend.recordIds).toBe("spread");
      const keys = Array.from({ length: 8 }, (_, i) => `orders:${1041 + i}`);
      for (const key of keys)
        expect(await backend.complete(won(await backend.claim(key, 60_000)))).toBe(true);
      const stored = await f.storedIds(scope);
      expect(stored.sort()).toEqual(keys.map((key) => f.id(key, "spread")).sort());
      // Eight keys in a row, eight prefixes: in id order they are no longer in key order.
      expect(new Set(stored.map((id) => id.slice(0, 4))).size).toBe(keys.length);
      const order = [...keys].sort((a, b) => (f.id(a, "spread") < f.id(b, "spread") ? -1 : 1));
      expect(order).not.toEqual(keys);
      // Another lock on the same store finds each key's record: the id is the key's alone.
      const other = f.lock(scope);
      expect(await other.claim(keys[0]!, 60_000)).toEqual({ status: "done" });
      expect(await other.inspect(keys[3]!)).toMatchObject({ key: keys[3], state: "done" });
    });

    it('"plain" writes the ids 0.1 wrote', async () => {
      const scope = f.freshScope();
      const backend = f.lock(scope, "plain");
      await backend.complete(won(await backend.claim("orders:1", 60_000)));
      expect(await f.storedIds(scope)).toEqual([f.id("orders:1", "plain")]);
      expect(await f.lock(scope, "plain").claim("orders:1", 60_000)).toEqual({ status: "done" });
    });

    it('control: a "spread" lock does not see the records 0.1 left', async () => {
      const scope = f.freshScope();
      await putOld(f, scope, Date.now());
      // Why an upgrade goes through "migrating": this duplicate would run again.
      expect(await f.lock(scope).claim("old-done", 60_000)).toMatchObject({ status: "won" });
    });

    it('"migrating" honours what 0.1 wrote, and moves a record home when it writes it', async () => {
      const scope = f.freshScope();
      const now = Date.now();
      await putOld(f, scope, now);
      const backend = f.lock(scope, "migrating");
      expect(await backend.claim("old-done", 60_000)).toEqual({ status: "done" });
      expect(await backend.claim("old-held", 60_000)).toEqual({
        status: "held",
        leaseExpiresAt: now + 10 * 60_000,
      });
      expect(await backend.inspect("old-held")).toMatchObject({
        state: "claimed",
        fencingId: 2_000,
      });
      // The holder 0.1 gave the claim to completes it: the record moves to its spread id.
      const held = { key: "old-held", fencingId: 2_000, leaseExpiresAt: now + 10 * 60_000 };
      expect(await backend.complete(held)).toBe(true);
      // A lapsed claim is reclaimed above its fence, at the key's spread id.
      const reclaimed = won(await backend.claim("old-lapsed", 60_000));
      expect(reclaimed.fencingId).toBeGreaterThan(3_000);
      // A stale holder of the moved record is refused there.
      expect(
        await backend.complete({ key: "old-lapsed", fencingId: 3_000, leaseExpiresAt: 0 }),
      ).toBe(false);
      expect(await backend.complete(reclaimed)).toBe(true);
      const fresh = won(await backend.claim("new", 60_000));
      await backend.complete(fresh);
      expect((await f.storedIds(scope)).sort()).toEqual(
        [
          f.id("old-done", "plain"),
          f.id("old-held", "spread"),
          f.id("old-lapsed", "spread"),
          f.id("new", "spread"),
        ].sort(),
      );
      for (const key of ["old-done", "old-held", "old-lapsed", "new"]) {
        expect(await backend.claim(key, 60_000)).toEqual({ status: "done" });
        expect(await f.lock(scope, "migrating").inspect(key)).toMatchObject({ key, state: "done" });
      }
    });

    it("purgeExpired deletes expired records under either id, and nothing else", async () => {
      const scope = f.freshScope();
      const now = Date.now();
      const expired = {
        state: "done",
        fencingId: 1,
        leaseExpiresAt: now - HOUR,
        expiresAt: now - 1_000,
        token: "t",
      } as const;
      await f.put(scope, f.id("gone-plain", "plain"), "gone-plain", expired);
      await f.put(scope, f.id("gone-spread", "spread"), "gone-spread", expired);
      await f.put(scope, f.id("kept-plain", "plain"), "kept-plain", {
        ...expired,
        expiresAt: now + HOUR,
      });
      for (const layout of ["spread", "migrating"] as const) {
        // Each layout's purge judges every record of the store, whatever its id.
        expect(await f.lock(scope, layout).purgeExpired()).toBe(layout === "spread" ? 2 : 0);
      }
      expect(await f.storedIds(scope)).toEqual([f.id("kept-plain", "plain")]);
    });
  });
}

/** What 0.1 left in a store: a done key, a live claim and a lapsed one, at their plain ids. */
async function putOld(f: RecordIdsFixture, scope: string, now: number): Promise<void> {
  const records: [string, RawRecord][] = [
    [
      "old-done",
      {
        state: "done",
        fencingId: 1_000,
        leaseExpiresAt: now - 1_000,
        expiresAt: now + HOUR,
        token: "a",
      },
    ],
    [
      "old-held",
      {
        state: "claimed",
        fencingId: 2_000,
        leaseExpiresAt: now + 10 * 60_000,
        expiresAt: now + HOUR,
        token: "b",
      },
    ],
    [
      "old-lapsed",
      {
        state: "claimed",
        fencingId: 3_000,
        leaseExpiresAt: now - 1_000,
        expiresAt: now + HOUR,
        token: "c",
      },
    ],
  ];
  for (const [key, record] of records) await f.put(scope, f.id(key, "plain"), key, record);
}
