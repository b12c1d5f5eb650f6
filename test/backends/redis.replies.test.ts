// How RedisLock reads each script's reply, over a stub client: the integer replies the scripts
// give, the tagged ones of a record with a fingerprint or a result, and anything else refused
// as a BackendError naming the call and the key. And what it sends: the arguments a call gives,
// checked on the public methods, passed as they are by the trusted port.
import { describe, expect, it } from "vitest";
import { RedisLock } from "../../src/backends/redis/index.js";
import { CLAIM, COMPLETE } from "../../src/backends/redis/scripts.js";
import { trustedPort } from "../../src/core/trusted-port.js";
import { BackendError } from "../../src/index.js";

/** The script arguments (ARGV) of each call the stub was sent. */
let sent: string[][] = [];

function backendAnswering(reply: unknown): RedisLock {
  const answer = async (_sha: string, _keys: number, _key: string, ...args: string[]) => {
    sent.push(args);
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

  it("reads the tagged answers of a record with a fingerprint or a result", async () => {
    const at = 1_700_000_000_000;
    expect(await backendAnswering(["held", at, "fp"]).claim("k", 1_000)).toEqual({
      status: "held",
      leaseExpiresAt: at,
      fingerprint: "fp",
    });
    const both = ["done", "fingerprint", "fp", "result", "r:1"];
    expect(await backendAnswering(both).claim("k", 1_000)).toEqual({
      status: "done",
      fingerprint: "fp",
      result: "r:1",
    });
    // Each field comes as a name-value pair, only when stored; the empty result is one.
    const fpOnly = await backendAnswering(["done", "fingerprint", "fp"]).claim("k", 1_000);
    expect(fpOnly).toEqual({ status: "done", fingerprint: "fp" });
    expect(fpOnly).not.toHaveProperty("result");
    const resultOnly = await backendAnswering(["done", "result", ""]).claim("k", 1_000);
    expect(resultOnly).toEqual({ status: "done", result: "" });
    expect(resultOnly).not.toHaveProperty("fingerprint");
    // A result alone (claim.lua's common once() duplicate) is the stored text, no array.
    expect(await backendAnswering("r:1").claim("k", 1_000)).toEqual({
      status: "done",
      result: "r:1",
    });
    expect(await backendAnswering(Buffer.from("r:é")).claim("k", 1_000)).toEqual({
      status: "done",
      result: "r:é",
    });
    // GLIDE with a bytes decoder answers Buffers for the strings.
    const bytes = ["done", "result", "r:é"].map((t) => Buffer.from(t));
    expect(await backendAnswering(bytes).claim("k", 1_000)).toEqual({
      status: "done",
      result: "r:é",
    });
  });

  it("reads inspect's record, with or without its fields", async () => {
    const row = [5, "done", 7, 3, 9];
    expect(await backendAnswering([5]).inspect("k")).toBeUndefined();
    const bare = { key: "k", state: "done", fencingId: 7, leaseExpiresAt: 3, expiresAt: 9, now: 5 };
    const plain = await backendAnswering(row).inspect("k");
    expect(plain).toEqual(bare);
    expect(Object.keys(plain ?? {})).not.toContain("fingerprint");
    const fields = [...row, "fingerprint", "fp", "result", "r:1"];
    expect(await backendAnswering(fields).inspect("k")).toEqual({
      ...bare,
      fingerprint: "fp",
      result: "r:1",
    });
    expect(await backendAnswering([...row, "result", ""]).inspect("k")).toEqual({
      ...bare,
      result: "",
    });
    for (const reply of [
      [...row, "fingerprint"],
      [...row, "other", "x"],
      [...row, "result", 1],
      [...row, "result", "a", "result", "b"],
    ]) {
      await expect(backendAnswering(reply).inspect("k")).rejects.toBeInstanceOf(BackendError);
    }
  });

  it("sends a fingerprint or a result only when the call gives one", async () => {
    const backend = backendAnswering(1);
    sent = [];
    await backend.claim("k", 1_000).catch(() => {});
    await backend.claim("k", 1_000, {}).catch(() => {});
    await backend.claim("k", 1_000, { fingerprint: undefined }).catch(() => {});
    await backend.claim("k", 1_000, { fingerprint: "fp" }).catch(() => {});
    await backend.complete(claim);
    await backend.complete(claim, "");
    await backend.complete(claim, "r:1");
    // claim sends leaseMs, ttlMs, token (+ fingerprint); complete fencingId, ttlMs (+ result).
    const given = sent.map((args, i) => args.slice(i < 4 ? 3 : 2));
    expect(given).toEqual([[], [], [], ["fp"], [], [""], ["r:1"]]);
    expect(sent.map((args) => args.length)).toEqual([3, 3, 3, 4, 2, 3, 3]);
  });

  it("checks a direct caller's fingerprint and result before any I/O", async () => {
    const backend = backendAnswering(1);
    sent = [];
    const refused = { code: "INVALID_CONFIGURATION" };
    for (const options of ["fp", null, 7, { fingerprint: "" }, { fingerprint: 7 }]) {
      await expect(backend.claim("k", 1_000, options as never)).rejects.toMatchObject(refused);
    }
    await expect(
      backend.claim("k", 1_000, { fingerprint: "x".repeat(1_025) }),
    ).rejects.toMatchObject(refused);
    await expect(backend.claim("k", 1_000, { fingerprint: "a\0b" })).rejects.toMatchObject(refused);
    for (const result of [7, null, "a\0b", "\ud800", "x".repeat(16 * 1024 * 1024 + 1)]) {
      await expect(backend.complete(claim, result as never)).rejects.toMatchObject(refused);
    }
    // 16 MiB of UTF-8 bytes, not of UTF-16 units: 2-byte characters reach it at half the length.
    await expect(backend.complete(claim, "é".repeat(8 * 1024 * 1024 + 1))).rejects.toThrow(
      /at most 16777216 UTF-8 bytes/,
    );
    expect(sent).toEqual([]);
    await expect(backend.complete(claim, "x".repeat(16 * 1024 * 1024))).resolves.toBe(true);
    expect(sent).toHaveLength(1);
  });

  it("the trusted port passes the fingerprint and the result through as given", async () => {
    const backend = backendAnswering(1);
    const port = trustedPort(backend);
    expect(port).not.toBe(backend);
    sent = [];
    await port.claim("k", 1_000, { fingerprint: "fp" }).catch(() => {});
    await port.claim("k", 1_000).catch(() => {});
    await port.complete(claim, "r:1");
    await port.complete(claim);
    const given = sent.map((args, i) => args.slice(i < 2 ? 3 : 2));
    expect(given).toEqual([["fp"], [], ["r:1"], []]);
    expect(sent[0]?.slice(0, 2)).toEqual(["1000", String(backend.ttlMs)]);
    expect(sent[2]?.slice(0, 2)).toEqual(["7", String(backend.ttlMs)]);
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
    ["an empty string", "", "claim"],
    ["empty bytes", Buffer.alloc(0), "claim"],
    ["a pair of strings", ["1", "2"], "claim"],
    ["a held answer without its fingerprint", ["held", 5, null], "claim"],
    ["a held answer with a time of 0", ["held", 0, "fp"], "claim"],
    ["a done answer with a number for a field", ["done", "result", 1], "claim"],
    ["a done answer with a name but no value", ["done", "fingerprint"], "claim"],
    ["a done answer with an unknown field", ["done", "other", "x"], "claim"],
    ["an unknown tag", ["won", "fingerprint", "r"], "claim"],
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

  it("runs the legacy text, from then on, on a server that refuses a write after TIME", async () => {
    // Redis 4 (and 5 or 6 with lua-replicate-commands off) answers this before any write.
    const refusal = new Error(
      "ERR Error running script (call to f_x): @user_script:40: @user_script: 40: Write commands " +
        "not allowed after non deterministic commands. Call redis.replicate_commands() at the " +
        "start of your script in order to switch to single commands replication mode.",
    );
    const legacy = new Set([CLAIM.legacy?.sha, COMPLETE.legacy?.sha]);
    const calls: string[] = [];
    const evalsha = async (sha: string) => {
      calls.push(legacy.has(sha) ? "legacy" : "modern");
      if (!legacy.has(sha)) throw refusal;
      return sha === CLAIM.legacy?.sha ? [42, 1_700_000_000_000] : 1;
    };
    const eval_ = async () => {
      throw new Error("EVAL is only for NOSCRIPT");
    };
    const backend = new RedisLock({ client: { evalsha, eval: eval_ }, prefix: "stub:" });
    const won = await backend.claim("k", 1_000);
    expect(won).toMatchObject({ status: "won", claim: { fencingId: 42 } });
    expect(await backend.complete(claim)).toBe(true);
    expect(calls).toEqual(["modern", "legacy", "legacy"]);
  });

  it("does not retry an error other than that refusal", async () => {
    const failure = new Error("ERR Error running script: @user_script:1: something else");
    let calls = 0;
    const answer = async () => {
      calls++;
      throw failure;
    };
    const error = await new RedisLock({ client: { evalsha: answer, eval: answer } })
      .claim("k", 1_000)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ verb: "claim", cause: failure });
    expect(calls).toBe(1);
  });
});
