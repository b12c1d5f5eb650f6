// Expected outcomes are answers, not faults: a duplicate or a held key costs no stack trace
// (most of what an exception costs), and the surfaces branch on them without any exception.
import { describe, expect, it } from "vitest";
import {
  Duplicate,
  InMemoryLock,
  InProgress,
  idempotentHttp,
  lock,
  mutex,
} from "../../src/index.js";
import { pushBody } from "../../src/testing/index.js";
import { silentLogger } from "../support/logger.js";

describe("refusals: Duplicate and InProgress", () => {
  it("a duplicate rejects with Duplicate whose stack is its one line; the stack limit is restored", async () => {
    const backend = new InMemoryLock();
    const limit = Error.stackTraceLimit;
    await lock("k", { backend }, () => undefined);
    const error = await lock("k", { backend }, () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Duplicate);
    expect((error as Error).stack).toBe(`Duplicate: ${(error as Error).message}`);
    expect(Error.stackTraceLimit).toBe(limit);
    // Any other error still carries its frames.
    expect(new Error("x").stack?.split("\n").length).toBeGreaterThan(1);
  });

  it("a held key rejects with InProgress (lease end in the text), and a mutex on a done key says lock() completed it", async () => {
    const backend = new InMemoryLock();
    const held = await backend.claim("h", 60_000);
    expect(held.status).toBe("won");
    const error = await lock("h", { backend }, () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InProgress);
    expect((error as InProgress).leaseExpiresAt).toBeTypeOf("number");
    expect((error as Error).message).toContain(" until ");
    expect((error as Error).stack?.split("\n")).toHaveLength(1);
    await lock("d", { backend }, () => undefined);
    const onDone = await mutex("d", { backend }, () => undefined).catch((e: unknown) => e);
    expect(onDone).toBeInstanceOf(InProgress);
    expect((onDone as Error).message).toContain("(the key was completed by lock())");
  });

  it("InProgress names each call's own key, lease end and detail, however the calls alternate", () => {
    const texts = [
      new InProgress("a", Date.UTC(2030, 0, 1)),
      new InProgress("a", Date.UTC(2030, 0, 1)),
      new InProgress("a", Date.UTC(2031, 0, 1)),
      new InProgress("b", Date.UTC(2031, 0, 1)),
      new InProgress("b"),
      new InProgress("b", undefined, " (the key was completed by lock())"),
      new InProgress("a", Date.UTC(2030, 0, 1)),
    ].map((error) => error.message);
    expect(texts).toEqual([
      'key "a" is held by another holder until 2030-01-01T00:00:00.000Z',
      'key "a" is held by another holder until 2030-01-01T00:00:00.000Z',
      'key "a" is held by another holder until 2031-01-01T00:00:00.000Z',
      'key "b" is held by another holder until 2031-01-01T00:00:00.000Z',
      'key "b" is held by another holder',
      'key "b" is held by another holder (the key was completed by lock())',
      'key "a" is held by another holder until 2030-01-01T00:00:00.000Z',
    ]);
  });

  it("with stack capture frozen (a hardened realm), refusals are still built and thrown", async () => {
    const descriptor = Object.getOwnPropertyDescriptor(Error, "stackTraceLimit");
    Object.defineProperty(Error, "stackTraceLimit", {
      value: 10,
      writable: false,
      configurable: true,
    });
    try {
      const backend = new InMemoryLock();
      await lock("k", { backend }, () => undefined);
      await expect(lock("k", { backend }, () => undefined)).rejects.toBeInstanceOf(Duplicate);
    } finally {
      if (descriptor) Object.defineProperty(Error, "stackTraceLimit", descriptor);
    }
  });

  it("a held push answers 503 with the holder's lease end in the body; a duplicate 204", async () => {
    const backend = new InMemoryLock();
    const handler = idempotentHttp({ backend, logger: silentLogger }, () => undefined);
    const answer = async () => {
      const res = {
        statusCode: 0,
        body: "",
        end(chunk?: string) {
          this.body = chunk ?? "";
        },
      };
      await handler({ headers: {}, body: pushBody({ n: 1 }, { messageId: "m-1" }) }, res);
      return res;
    };
    const claim = await backend.claim("m-1", 60_000);
    expect(claim.status).toBe("won");
    const held = await answer();
    expect(held.statusCode).toBe(503);
    expect(held.body).toMatch(/"m-1" is held by another holder until \d{4}-/);
    if (claim.status === "won") await backend.complete(claim.claim);
    expect((await answer()).statusCode).toBe(204);
  });
});
