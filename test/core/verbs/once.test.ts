// once(): the verb's own behaviour on InMemoryLock; the cases every backend must pass are in
// src/testing/contract-records.ts.
import { describe, expect, it } from "vitest";
import {
  Duplicate,
  InMemoryLock,
  InvalidConfiguration,
  type LockBackend,
  lock,
  once,
  PayloadMismatch,
} from "../../../src/index.js";
import { captureLogger, silentLogger } from "../../support/logger.js";

const fresh = () => new InMemoryLock();

describe("once()", () => {
  it("replays the first run's result; the body runs once", async () => {
    const backend = fresh();
    let runs = 0;
    const body = async () => ({ orderId: `ord_${++runs}` });
    expect(await once("k", { backend }, body)).toEqual({ orderId: "ord_1" });
    expect(await once("k", { backend }, body)).toEqual({ orderId: "ord_1" });
    expect(runs).toBe(1);
  });

  it("a codec keeps what JSON cannot (Dates, BigInts)", async () => {
    const backend = fresh();
    const codec = {
      encode: (v: { at: Date; n: bigint }) => `${v.at.toISOString()}|${v.n}`,
      decode: (t: string) => {
        const [at, n] = t.split("|");
        return { at: new Date(at!), n: BigInt(n!) };
      },
    };
    const value = { at: new Date("2026-12-05T10:00:00Z"), n: 2n ** 70n };
    await once("k", { backend, codec }, async () => value);
    const again = await once("k", { backend, codec }, async () => ({ at: new Date(0), n: 0n }));
    expect(again.at.getTime()).toBe(value.at.getTime());
    expect(again.n).toBe(value.n);
  });

  it("a result JSON cannot encode completes the key, logs an ERROR, and later calls reject Duplicate saying so", async () => {
    const backend = fresh();
    const logger = captureLogger();
    let runs = 0;
    const first = await once("k", { backend, logger }, async () => {
      runs += 1;
      return 10n;
    });
    expect(first).toBe(10n); // the first caller still gets its value
    const [line] = logger.at("ERROR");
    expect(line?.fields).toMatchObject({ key: "k", outcome: "result_not_recorded" });
    expect(String(line?.fields.reason)).toContain("JSON cannot encode");
    const later = await once("k", { backend, logger }, async () => 1n).catch((e: unknown) => e);
    expect(later).toBeInstanceOf(Duplicate);
    expect((later as Error).message).toContain("no result was recorded");
    expect(runs).toBe(1);
  });

  it("a result over maxResultBytes is not recorded and never causes a second run", async () => {
    const backend = fresh();
    let runs = 0;
    const big = "x".repeat(5_000);
    const options = { backend, logger: silentLogger, maxResultBytes: 1_000 };
    expect(
      await once("k", options, async () => {
        runs++;
        return big;
      }),
    ).toBe(big);
    await expect(
      once("k", options, async () => {
        runs++;
        return "y";
      }),
    ).rejects.toThrow(/over the limit of 1000/);
    expect(runs).toBe(1);
  });

  it("a codec whose encode throws, or returns text with U+0000, records nothing but completes", async () => {
    for (const encode of [
      () => {
        throw new Error("cannot");
      },
      () => "a\u0000b",
      () => 42 as unknown as string,
    ]) {
      const backend = fresh();
      const codec = { encode, decode: (t: string) => t };
      await once("k", { backend, codec, logger: silentLogger }, async () => "v");
      await expect(once("k", { backend, codec }, async () => "w")).rejects.toBeInstanceOf(
        Duplicate,
      );
    }
  });

  it("a recorded result the codec cannot decode rejects InvalidConfiguration, never runs the body", async () => {
    const backend = fresh();
    await once("k", { backend }, async () => ({ a: 1 }));
    let ran = false;
    const codec = {
      encode: JSON.stringify,
      decode: () => {
        throw new Error("bad codec");
      },
    };
    const error = await once("k", { backend, codec }, async () => {
      ran = true;
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidConfiguration);
    expect((error as Error).message).toContain("could not be read back");
    expect(ran).toBe(false);
  });

  it("a body that returns nothing replays undefined", async () => {
    const backend = fresh();
    await once("k", { backend }, async () => {});
    expect(await once("k", { backend }, async () => "other")).toBeUndefined();
  });

  it("is refused before any I/O on a backend that stores no results, naming it", async () => {
    const inner = fresh();
    let claims = 0;
    const backend: LockBackend = {
      claim: (k, l) => {
        claims++;
        return inner.claim(k, l);
      },
      complete: (c) => inner.complete(c),
      release: (c) => inner.release(c),
    };
    const error = await once("k", { backend }, async () => 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidConfiguration);
    expect((error as Error).message).toMatch(/once\(\) needs a backend that stores results/);
    await expect(lock("k", { backend, fingerprint: "f" }, async () => 1)).rejects.toThrow(
      /stores fingerprints/,
    );
    expect(claims).toBe(0);
  });

  it("refuses a bad codec, maxResultBytes or fingerprint before any I/O", async () => {
    const backend = fresh();
    const body = async () => 1;
    for (const options of [
      { codec: { encode: JSON.stringify } },
      { codec: "json" },
      { maxResultBytes: 0 },
      { maxResultBytes: 1.5 },
      { fingerprint: "" },
      { fingerprint: 42 },
      { fingerprint: "a\u0000" },
      { fingerprint: "f".repeat(1_025) },
    ]) {
      await expect(
        once("k", { backend, ...(options as object) }, body),
        JSON.stringify(options),
      ).rejects.toBeInstanceOf(InvalidConfiguration);
    }
    expect(backend.size).toBe(0);
  });

  it("fingerprints: same payload is a replay, another is PayloadMismatch, none compares nothing", async () => {
    const backend = fresh();
    await once("k", { backend, fingerprint: "A" }, async () => "first");
    expect(await once("k", { backend, fingerprint: "A" }, async () => "x")).toBe("first");
    expect(await once("k", { backend }, async () => "x")).toBe("first");
    const error = await once("k", { backend, fingerprint: "B" }, async () => "x").catch((e) => e);
    expect(error).toBeInstanceOf(PayloadMismatch);
    expect(error).toMatchObject({ code: "payload_mismatch", key: "k" });
  });

  it("a mismatch against a live holder does not wait out waitMs", async () => {
    const backend = fresh();
    let release = () => {};
    const holding = lock(
      "k",
      { backend, fingerprint: "A" },
      () => new Promise<void>((r) => (release = r)),
    );
    const started = Date.now();
    const error = await once(
      "k",
      { backend, fingerprint: "B", waitMs: 10_000 },
      async () => 1,
    ).catch((e) => e);
    expect(error).toBeInstanceOf(PayloadMismatch);
    expect(Date.now() - started).toBeLessThan(5_000);
    release();
    await holding;
  });
});
