// trustedPort() hands the engine a built-in backend's own port methods without their argument
// checks, and anything else back as it is: a custom backend, a wrapper, a subclass, a patched
// instance. It never throws. The built-in backends' side: test/backends/trusted-port.test.ts.
import { describe, expect, it, vi } from "vitest";
import type { LockBackend } from "../../src/core/port.js";
import { offerTrustedPort, trustedPort } from "../../src/core/trusted-port.js";
import { InMemoryLock } from "../../src/index.js";
import { won } from "../support/claims.js";

const KEY = Symbol.for("gcp-pubsub-idempotency.trusted-port");

function customBackend(): LockBackend {
  return {
    claim: async () => ({ status: "done" }),
    complete: async () => true,
    release: async () => {},
  };
}

describe("trustedPort", () => {
  it("is the backend itself for a custom backend", () => {
    const backend = customBackend();
    expect(trustedPort(backend)).toBe(backend);
  });

  it("is the backend itself, and never throws, for a Proxy whose traps throw", () => {
    const hostile = new Proxy(customBackend(), {
      get() {
        throw new Error("get trap");
      },
      getOwnPropertyDescriptor() {
        throw new Error("descriptor trap");
      },
    });
    expect(trustedPort(hostile)).toBe(hostile);
    for (const value of [null, undefined, 0, "backend"]) {
      expect(trustedPort(value as never)).toBe(value);
    }
  });

  it("is another object for an InMemoryLock: its port methods, frozen, and no other", () => {
    const backend = new InMemoryLock();
    const port = trustedPort(backend);
    expect(port).not.toBe(backend);
    expect(Object.isFrozen(port)).toBe(true);
    expect(Object.keys(port).sort()).toEqual(["claim", "complete", "release", "renew"]);
  });

  it("runs the lock's own records: what the port writes, the public methods read", async () => {
    const backend = new InMemoryLock();
    const port = trustedPort(backend);
    const claim = won(await port.claim("orders:1", 60_000));
    expect(await backend.claim("orders:1", 60_000)).toMatchObject({ status: "held" });
    expect(await port.complete(claim)).toBe(true);
    expect(await backend.claim("orders:1", 60_000)).toEqual({ status: "done" });
    expect(backend.size).toBe(1);
  });

  it("is the backend itself for a subclass, which may override what the port would bypass", () => {
    class Counting extends InMemoryLock {
      completes = 0;
      override complete(...args: Parameters<InMemoryLock["complete"]>) {
        this.completes++;
        return super.complete(...args);
      }
    }
    const backend = new Counting();
    expect(trustedPort(backend)).toBe(backend);
  });

  it("is the wrapper itself for a Proxy of a built-in, and for an object made from one", () => {
    const backend = new InMemoryLock();
    const proxy = new Proxy(backend, {});
    expect(trustedPort(proxy)).toBe(proxy);
    const derived = Object.create(backend) as InMemoryLock;
    expect(trustedPort(derived)).toBe(derived);
    const copy = { ...backend } as unknown as LockBackend;
    expect(trustedPort(copy)).toBe(copy);
  });

  it("is the backend itself once one of its port methods was replaced", () => {
    for (const name of ["claim", "complete", "release", "renew"] as const) {
      const backend = new InMemoryLock();
      expect(trustedPort(backend)).not.toBe(backend);
      Object.assign(backend, { [name]: () => Promise.reject(new Error("store down")) });
      expect(trustedPort(backend)).toBe(backend);
    }
    const added = new InMemoryLock();
    Object.assign(added, { completeInTransaction: async () => ({ completed: true }) });
    expect(trustedPort(added)).toBe(added);
  });

  it("hides the offer: a non-enumerable property under the registry symbol", () => {
    const backend = new InMemoryLock();
    const descriptor = Object.getOwnPropertyDescriptor(backend, KEY);
    expect(descriptor).toMatchObject({ enumerable: false, writable: false, configurable: false });
    expect(Object.keys(backend)).not.toContain(String(KEY));
    expect(JSON.stringify(backend)).not.toContain("claim");
  });

  it("finds an offer made by another copy of the module (the ESM and CJS builds)", async () => {
    // With the module registry reset, the module is evaluated again: a second copy.
    vi.resetModules();
    const other = await import("../../src/core/trusted-port.js");
    expect(other.offerTrustedPort).not.toBe(offerTrustedPort);
    const backend = customBackend();
    const port = customBackend();
    other.offerTrustedPort(backend, port);
    expect(trustedPort(backend)).toBe(port);
    expect(other.trustedPort(new InMemoryLock())).not.toBeInstanceOf(InMemoryLock);
  });

  it("ignores an offer that is not one, or that belongs to another object", () => {
    const forged = customBackend();
    Object.defineProperty(forged, KEY, { value: { port: customBackend() } });
    expect(trustedPort(forged)).toBe(forged);
    const borrowed = customBackend();
    const owner = new InMemoryLock();
    Object.defineProperty(borrowed, KEY, {
      value: Object.getOwnPropertyDescriptor(owner, KEY)?.value,
    });
    expect(trustedPort(borrowed)).toBe(borrowed);
  });
});
