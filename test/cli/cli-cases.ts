// What the CLI must do on every store, run as users run it (the bundled bin in a child process):
// inspect a done, a held and an absent key; release a held key and see the next claim win at
// fence + 2; refuse to release a done key; purge with a count. Written once, run per store.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LockBackend } from "../../src/core/port.js";
import { won } from "../support/claims.js";
import { type BuiltCli, buildCli } from "../support/cli.js";

export interface CliTarget {
  /** Names the suite: "redis", "postgres", … */
  name: string;
  /** The store's arguments for the bin: --backend URL, and --prefix or --table. */
  args(): string[];
  /** A backend on the same store, in this process, with `ttlMs`. */
  backend(ttlMs?: number): LockBackend | Promise<LockBackend>;
  /** The store deletes expired records itself (Redis): purge has nothing to do. */
  selfExpiring?: boolean;
  /** How long a record made with a short ttl takes to expire here; default 400 ms. */
  expiryWaitMs?: number;
  /**
   * The first line of the text output, naming what was read: `read redis 127.0.0.1:6379,
   * prefix idem:`; and the `read` field of --json, in part.
   */
  read(): { line: string; json: Record<string, string> };
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));
let counter = 0;
const freshKey = (label: string) => `cli:${Date.now().toString(36)}:${label}:${counter++}`;

export function describeCli(target: CliTarget): void {
  describe(`the CLI on ${target.name}`, () => {
    let cli: BuiltCli;
    beforeAll(async () => {
      cli = await buildCli();
    });
    afterAll(() => cli?.remove());
    const run = (...args: string[]) => cli.run(args);

    it("inspect: a done, a held and an absent key, in the store's clock (--json and text)", async () => {
      const backend = await target.backend();
      const done = freshKey("done");
      const held = freshKey("held");
      const absent = freshKey("absent");
      const doneClaim = won(await backend.claim(done, 60_000));
      expect(await backend.complete(doneClaim)).toBe(true);
      const claim = won(await backend.claim(held, 60_000));

      const json = await run("inspect", "--json", ...target.args(), done, held, absent);
      expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: "" });
      const { records, read } = JSON.parse(json.stdout) as {
        records: Array<Record<string, unknown>>;
        read: unknown;
      };
      expect(read).toMatchObject(target.read().json);
      expect(records).toEqual([
        expect.objectContaining({
          key: done,
          status: "done",
          state: "done",
          fencingId: doneClaim.fencingId,
        }),
        expect.objectContaining({
          key: held,
          status: "held",
          state: "claimed",
          fencingId: claim.fencingId,
          leaseExpiresAt: claim.leaseExpiresAt,
        }),
        { key: absent, status: "absent" },
      ]);
      const heldRecord = records[1] as { now: number; expiresAt: number };
      expect(claim.leaseExpiresAt).toBeGreaterThan(heldRecord.now);
      expect(heldRecord.expiresAt).toBeGreaterThan(claim.leaseExpiresAt);

      const text = await run("inspect", ...target.args(), held);
      expect(text.code).toBe(0);
      expect(text.stdout.split("\n").slice(0, 2)).toEqual([target.read().line, ""]);
      expect(text.stdout).toMatch(/^key {9}cli:/m);
      expect(text.stdout).toMatch(/^status {6}held \(a live claim/m);
      expect(text.stdout).toMatch(new RegExp(`^fencing id {2}${claim.fencingId}$`, "m"));
      expect(text.stdout).toMatch(/^lease end {3}\d{4}-\d\d-\d\dT.+Z \(in \d+s\)$/m);
      const none = await run("inspect", ...target.args(), absent);
      expect(none.stdout).toBe(
        `${target.read().line}\n\nkey     ${absent}\nstatus  absent (no record here; a wrong --prefix, --table, --kind or --record-ids reads as absent too. The next claim takes the key at a new fence, above any it had)\n`,
      );
      await backend.close?.();
    });

    it("release --yes: the held key's fence rises; the next claim wins at fence + 2, the old holder is fenced out", async () => {
      const backend = await target.backend();
      const key = freshKey("stuck");
      const stuck = won(await backend.claim(key, 60_000));
      const released = await run("release", "--yes", ...target.args(), key);
      expect({ code: released.code, stderr: released.stderr }).toEqual({ code: 0, stderr: "" });
      expect(released.stdout.split("\n")[0]).toBe(target.read().line);
      expect(released.stdout).toContain(
        `released ${key}: fence ${stuck.fencingId} → ${stuck.fencingId + 1}; ` +
          `the next claim takes it at fence ${stuck.fencingId + 2}`,
      );
      const next = won(await backend.claim(key, 60_000));
      expect(next.fencingId).toBe(stuck.fencingId + 2);
      expect(await backend.complete(stuck)).toBe(false);
      expect(await backend.complete(next)).toBe(true);
      await backend.close?.();
    });

    it("release: a done key is never released (exit 1), and --json says so", async () => {
      const backend = await target.backend();
      const key = freshKey("done-release");
      const claim = won(await backend.claim(key, 60_000));
      expect(await backend.complete(claim)).toBe(true);
      const result = await run("release", "--yes", "--json", ...target.args(), key);
      expect(result.code).toBe(1);
      expect(JSON.parse(result.stdout)).toMatchObject({
        read: target.read().json,
        key,
        released: false,
        before: { status: "done", fencingId: claim.fencingId },
        message: expect.stringMatching(/^not released: it is done/),
      });
      expect(await backend.claim(key, 60_000)).toEqual({ status: "done" });
      await backend.close?.();
    });

    it("release without --yes and without a terminal: asks nothing, releases nothing (exit 2)", async () => {
      const backend = await target.backend();
      const key = freshKey("unconfirmed");
      const claim = won(await backend.claim(key, 60_000));
      const result = await run("release", ...target.args(), key);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/pass --yes/);
      expect(await backend.claim(key, 60_000)).toEqual({
        status: "held",
        leaseExpiresAt: claim.leaseExpiresAt,
      });
      await backend.close?.();
    });

    it("purge: deletes the expired records and says how many", async () => {
      const short = await target.backend(100);
      for (let i = 0; i < 3; i++) {
        // A long lease (a slow store must still win), then done for 100 ms: the ttl counts from complete.
        expect(await short.complete(won(await short.claim(freshKey("expired"), 60_000)))).toBe(
          true,
        );
      }
      await short.close?.();
      await sleep(target.expiryWaitMs ?? 400);
      const purged = await run("purge", "--json", ...target.args());
      expect({ code: purged.code, stderr: purged.stderr }).toEqual({ code: 0, stderr: "" });
      const answer = JSON.parse(purged.stdout) as { deleted: number; note?: string; read: unknown };
      expect(answer.read).toMatchObject(target.read().json);
      if (target.selfExpiring) {
        expect(answer).toMatchObject({ deleted: 0, note: expect.stringMatching(/PEXPIREAT/) });
      } else {
        expect(answer.deleted).toBe(3);
      }
      const text = await run("purge", ...target.args());
      expect(text.code).toBe(0);
      const [first, second] = text.stdout.split("\n");
      expect(first).toBe(target.read().line);
      expect(second).toMatch(
        target.selfExpiring ? /nothing to purge/ : /^deleted 0 expired records in \S+$/,
      );
    });
  });
}
