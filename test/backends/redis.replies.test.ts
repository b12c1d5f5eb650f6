// How RedisLock reads each script's reply, over a stub client: the integer replies the scripts
// give, and anything else refused as a BackendError naming the call and the key.
import { describe, expect, it } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { BackendError } from "../../src/index.js";

function backendAnswering(reply: unknown): RedisLock {
  const answer = async () => {
    if (reply instanceof Error) throw reply;
    return reply;
  };
  return new RedisLock({ client: { evalsha: answer, eval: answer }, prefix: "stub:" });
}

const claim = { key: "k", fencingId: 7, leaseExpiresAt: 1 };

describe("RedisLock reading script replies", () => {
  it("reads claim's integers: 0 done, a positive time held, a pair won", async () => {
    expect(await backendAnswering(0).claim("k", 1_000)).toEqual({ status: "done" });
    expect(await backendAnswering(1_700_000_000_000).claim("k", 1_000)).toEqual({
      status: "held",
      leaseExpiresAt: 1_700_000_000_000,
    });
    expect(await backendAnswering([42, 1_700_000_000_000]).claim("k", 1_000)).toEqual({
      status: "won",
      claim: { key: "k", fencingId: 42, leaseExpiresAt: 1_700_000_000_000 },
    });
  });

  it("reads 1 / 0 from complete, release and renew", async () => {
    expect(await backendAnswering(1).complete(claim)).toBe(true);
    expect(await backendAnswering(0).complete(claim)).toBe(false);
    await expect(backendAnswering(0).release(claim)).resolves.toBeUndefined();
    expect(await backendAnswering(1).renew(claim, 1_000)).toBe(true);
    expect(await backendAnswering(0).renew(claim, 1_000)).toBe(false);
  });

  it.each([
    ["an old-format claim reply", ["won", 1, 2], "claim"],
    ["a negative number", -5, "claim"],
    ["a fraction", 1.5, "claim"],
    ["a string", "0", "claim"],
    ["a pair of strings", ["1", "2"], "claim"],
    ["a 2 from complete", 2, "complete"],
    ["an array from renew", [1, 2], "renew"],
    ["nothing from release", null, "release"],
  ])("refuses %s as a BackendError naming the call and the key", async (_, reply, verb) => {
    const backend = backendAnswering(reply);
    const call =
      verb === "claim"
        ? backend.claim("k", 1_000)
        : verb === "complete"
          ? backend.complete(claim)
          : verb === "renew"
            ? backend.renew(claim, 1_000)
            : backend.release(claim);
    const error = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ backend: "redis", verb, key: "k" });
    expect((error as Error).message).toContain("unexpected script reply");
  });

  it("wraps a driver's error as a BackendError with it as the cause", async () => {
    const failure = new Error("READONLY You can't write against a read only replica.");
    const error = await backendAnswering(failure)
      .claim("k", 1_000)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect(error).toMatchObject({ verb: "claim", key: "k", cause: failure });
  });
});
