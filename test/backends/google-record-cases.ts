// What DatastoreLock, FirestoreLock and SpannerLock keep beyond the lease, run on each emulator
// through describeGoogleLockCases (google-cases.ts): the fingerprint answered with held and
// done, a result replayed whole (100 KB, and the largest the store claims to keep, beside the
// longest key and fingerprint), every reclaim clearing both, and no extra RPC for either.
import { expect, it } from "vitest";
import { MAX_KEY_BYTES } from "../../src/core/constants.js";
import { InvalidConfiguration } from "../../src/core/errors.js";
import type { Claim } from "../../src/core/port.js";
import { won } from "../support/claims.js";
import type { GoogleLockFixture } from "./google-cases.js";

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** Text of exactly `bytes` UTF-8 bytes (at least 4), with quotes, newlines and non-ASCII in it. */
function textOfBytes(bytes: number, seed: string): string {
  const head = `${seed} "q" \\ \n é 中 `;
  const tail = "😀";
  const fill = bytes - Buffer.byteLength(head) - Buffer.byteLength(tail);
  const text = head + "x".repeat(fill) + tail;
  expect(Buffer.byteLength(text)).toBe(bytes);
  return text;
}

/** The records-that-remember cases; `shortLeaseMs` is the warm-up's lease to let lapse. */
export function describeGoogleRecordCases(f: GoogleLockFixture, shortLeaseMs: () => number): void {
  it("supports results and fingerprints", () => {
    const { supports } = f.backend(f.freshScope());
    expect(supports).toEqual({
      results: true,
      fingerprints: true,
      maxResultBytes: f.maxResultBytes,
    });
  });

  it("a fingerprint is answered with held and done; a 100 KB result is replayed whole", async () => {
    const scope = f.freshScope();
    const backend = f.backend(scope);
    const other = f.separateBackend(scope);
    const claim = won(await backend.claim("fp", 60_000, { fingerprint: "sha256:aaa" }));
    expect(await other.claim("fp", 60_000, { fingerprint: "sha256:bbb" })).toEqual({
      status: "held",
      leaseExpiresAt: claim.leaseExpiresAt,
      fingerprint: "sha256:aaa",
    });
    // A renew and a lost race leave the fingerprint as the win stored it.
    expect(await backend.renew(claim, 60_000)).toBe(true);
    const result = textOfBytes(100 * 1024, "r:");
    expect(await backend.complete(claim, result)).toBe(true);
    expect(await other.claim("fp", 60_000)).toEqual({
      status: "done",
      fingerprint: "sha256:aaa",
      result,
    });
    expect(await backend.inspect?.("fp")).toMatchObject({
      state: "done",
      fingerprint: "sha256:aaa",
      result,
    });
    // A retried complete finds it done and writes nothing: the result stays the first one's.
    expect(await backend.complete(claim, "r:other")).toBe(true);
    expect(await other.claim("fp", 60_000)).toMatchObject({ result });

    // Without a fingerprint or a result, the answers are as before.
    const plain = won(await backend.claim("plain", 60_000));
    expect(await other.claim("plain", 60_000)).toEqual({
      status: "held",
      leaseExpiresAt: plain.leaseExpiresAt,
    });
    expect(await backend.complete(plain)).toBe(true);
    expect(await other.claim("plain", 60_000)).toEqual({ status: "done" });
    const inspected = await backend.inspect?.("plain");
    expect(inspected).not.toHaveProperty("fingerprint");
    expect(inspected).not.toHaveProperty("result");
    // An empty result is a result.
    const empty = won(await backend.claim("empty", 60_000));
    expect(await backend.complete(empty, "")).toBe(true);
    expect(await other.claim("empty", 60_000)).toEqual({ status: "done", result: "" });
  });

  it("a reclaim stores its own fingerprint, or none, and clears the result", async () => {
    const scope = f.freshScope();
    const lease = shortLeaseMs();
    const backend = f.backend(scope);
    // A lapsed lease: the next win replaces the fingerprint, or drops it.
    won(await backend.claim("lapsed", lease, { fingerprint: "fp-first" }));
    await sleep(lease + 100);
    const second = won(await backend.claim("lapsed", 60_000, { fingerprint: "fp-second" }));
    expect(await backend.claim("lapsed", 60_000)).toMatchObject({ fingerprint: "fp-second" });
    // A release keeps it; the win after it (no fingerprint given) drops it.
    await backend.release(second);
    expect(await backend.inspect?.("lapsed")).toMatchObject({ fingerprint: "fp-second" });
    const third = won(await backend.claim("lapsed", 60_000));
    expect(await backend.claim("lapsed", 60_000)).toEqual({
      status: "held",
      leaseExpiresAt: third.leaseExpiresAt,
    });
    expect(await backend.inspect?.("lapsed")).not.toHaveProperty("fingerprint");

    // A done record past its ttl: the win clears its result and fingerprint.
    const ttlMs = 2 * lease;
    const shortLived = f.backend(scope, undefined, ttlMs);
    const done = won(await shortLived.claim("expired", 60_000, { fingerprint: "fp-old" }));
    expect(await shortLived.complete(done, "r:old")).toBe(true);
    expect(await shortLived.claim("expired", 60_000)).toEqual({
      status: "done",
      fingerprint: "fp-old",
      result: "r:old",
    });
    await sleep(ttlMs + 200);
    const again = won(await shortLived.claim("expired", 60_000));
    expect(again.fencingId).toBe(done.fencingId + 1);
    const record = await shortLived.inspect?.("expired");
    expect(record).toMatchObject({ state: "claimed" });
    expect(record).not.toHaveProperty("result");
    expect(record).not.toHaveProperty("fingerprint");
    expect(await shortLived.complete(again)).toBe(true);
    expect(await backend.claim("expired", 60_000)).toEqual({ status: "done" });
  });

  it("the largest result beside the longest key and fingerprint; a larger one is refused", async () => {
    const backend = f.backend(f.freshScope());
    const key = "k".repeat(MAX_KEY_BYTES);
    const fingerprint = "f".repeat(MAX_KEY_BYTES);
    const claim = won(await backend.claim(key, 60_000, { fingerprint }));
    const tooLarge = textOfBytes(f.maxResultBytes + 1, "r:");
    await expect(backend.complete(claim, tooLarge)).rejects.toBeInstanceOf(InvalidConfiguration);
    const largest = textOfBytes(f.maxResultBytes, "r:");
    expect(await backend.complete(claim, largest)).toBe(true);
    const answer = await backend.claim(key, 60_000);
    // toEqual would print megabytes on a mismatch.
    expect(answer.status).toBe("done");
    expect(answer.status === "done" && answer.fingerprint === fingerprint).toBe(true);
    expect(answer.status === "done" && answer.result === largest).toBe(true);
  }, 60_000);

  it("a fingerprint and a result cost no extra RPC; the result lands in the commit of DONE", async () => {
    const calls = new Map<string, number>();
    const backend = f.backend(f.freshScope(), { calls });
    const count = async (fn: () => Promise<unknown>) => {
      calls.clear();
      await fn();
      return [...calls.values()].reduce((x, y) => x + y, 0);
    };
    const expected = f.roundTrips;
    // A new lock's first call learns the store's time; the budget is the steady state's.
    await backend.claim("warm", 60_000);
    let claim: Claim | undefined;
    const options = { fingerprint: "fp" };
    expect(
      await count(async () => {
        claim = won(await backend.claim("rt", 60_000, options));
      }),
    ).toBe(expected.claimWon);
    expect(await count(() => backend.claim("rt", 60_000, options))).toBe(expected.claimHeld);
    expect(await count(() => backend.complete(claim!, "r:1"))).toBe(expected.complete);
    expect(await count(() => backend.claim("rt", 60_000, options))).toBe(expected.claimDone);
  });
}
