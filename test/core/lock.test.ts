import { describe, expect, it, vi } from "vitest";
import {
  type Claim,
  Duplicate,
  InMemoryLock,
  InProgress,
  InvalidConfiguration,
  InvalidKey,
  type LockBackend,
  lock,
  MAX_KEY_BYTES,
  mutex,
} from "../../src/index.js";
import { createFakeClock } from "../../src/testing/index.js";
import { captureLogger } from "../support/logger.js";

const LEASE = 1_000;
const TTL = 10_000;

function setup() {
  const clock = createFakeClock();
  const backend = new InMemoryLock({ ttlMs: TTL, now: clock.now });
  const logger = captureLogger();
  return { clock, backend, logger, options: { backend, leaseMs: LEASE, logger } };
}

/** Yield to the event loop `n` times so in-flight calls interleave. */
const ticks = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

/** Wraps a backend so every call takes a real turn of the event loop, like a network store. */
function withLatency(inner: LockBackend): LockBackend {
  const hop = () => new Promise((r) => setTimeout(r, Math.random() * 3));
  return {
    claim: async (k, l) => {
      await hop();
      const out = await inner.claim(k, l);
      await hop();
      return out;
    },
    complete: async (c) => {
      await hop();
      return inner.complete(c);
    },
    release: async (c) => {
      await hop();
      return inner.release(c);
    },
  };
}

describe("lock", () => {
  it("runs the body once and answers a redelivery with Duplicate", async () => {
    const { options } = setup();
    const body = vi.fn(() => "sent");
    await expect(lock("po-1", options, body)).resolves.toBe("sent");
    const again = lock("po-1", options, body);
    await expect(again).rejects.toBeInstanceOf(Duplicate);
    await expect(again).rejects.toMatchObject({ code: "DUPLICATE", key: "po-1" });
    expect(body).toHaveBeenCalledTimes(1);
  });

  it("hands the body its claim and a live signal", async () => {
    const { options } = setup();
    await lock("po-claim", options, (claim, signal) => {
      expect(claim).toMatchObject({ key: "po-claim", fencingId: 1 });
      expect(signal.aborted).toBe(false);
    });
  });

  it("admits exactly one body among many concurrent duplicates", async () => {
    const { backend } = setup();
    const slow = withLatency(backend);
    let bodies = 0;
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, () =>
        lock("hot", { backend: slow, leaseMs: LEASE, logger: captureLogger() }, async () => {
          bodies++;
          await new Promise((r) => setTimeout(r, 5));
        }),
      ),
    );
    expect(bodies).toBe(1);
    const rejected = results.filter((r) => r.status === "rejected");
    expect(rejected).toHaveLength(49);
    for (const r of rejected) {
      expect((r as PromiseRejectedResult).reason).toSatisfy(
        (e: unknown) => e instanceof InProgress || e instanceof Duplicate,
      );
    }
  });

  it("reports a live holder as InProgress with its lease end", async () => {
    const { backend, options } = setup();
    const held = await backend.claim("busy", LEASE);
    if (held.status !== "won") throw new Error("setup");
    const attempt = lock("busy", options, () => "never");
    await expect(attempt).rejects.toBeInstanceOf(InProgress);
    await expect(attempt).rejects.toMatchObject({
      key: "busy",
      leaseExpiresAt: held.claim.leaseExpiresAt,
    });
  });

  it("heals a crashed holder once its lease lapses, with a higher fence", async () => {
    const { backend, clock, options } = setup();
    await backend.claim("crash", LEASE); // the holder dies here: no complete, no release
    await expect(lock("crash", options, () => 1)).rejects.toBeInstanceOf(InProgress);
    clock.advance(LEASE);
    const fence = await lock("crash", options, (claim) => claim.fencingId);
    expect(fence).toBe(2);
    await expect(lock("crash", options, () => 1)).rejects.toBeInstanceOf(Duplicate);
  });

  it("commits DONE when the work outran a lease nobody reclaimed", async () => {
    const { clock, options, logger } = setup();
    await lock("slow", options, () => {
      clock.advance(LEASE * 3);
    });
    expect(logger.lines.filter((l) => l.severity === "ERROR")).toEqual([]);
    await expect(lock("slow", options, () => 1)).rejects.toBeInstanceOf(Duplicate);
  });

  it("acks and logs an alertable error when a reclaim fenced out the slow holder", async () => {
    const { clock, options, logger } = setup();
    let bodies = 0;
    const first = lock("zombie", options, async () => {
      bodies++;
      clock.advance(LEASE + 1);
      // A redelivery reclaims the lapsed key and finishes first.
      await lock("zombie", { ...options, logger: captureLogger() }, () => {
        bodies++;
      });
      return "first-result";
    });
    await expect(first).resolves.toBe("first-result");
    expect(bodies).toBe(2);
    const alerts = logger.lines.filter((l) => l.fields.outcome === "fenced_out");
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ severity: "ERROR", fields: { key: "zombie", alert: true } });
  });

  it("acks and logs when complete throws after the side effect", async () => {
    const { backend, logger } = setup();
    const broken: LockBackend = {
      claim: (k, l) => backend.claim(k, l),
      complete: async () => {
        throw new Error("store down");
      },
      release: (c) => backend.release(c),
    };
    await expect(lock("store-err", { backend: broken, logger }, () => "done")).resolves.toBe(
      "done",
    );
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]).toMatchObject({
      severity: "ERROR",
      fields: { outcome: "complete_failed", key: "store-err" },
    });
    expect(String(logger.lines[0]?.fields.reason)).toContain("store down");
  });

  it("releases on a transient failure, so the redelivery runs once and succeeds", async () => {
    const { options } = setup();
    let attempts = 0;
    const body = () => {
      attempts++;
      if (attempts === 1) throw new Error("supplier 503");
      return "ok";
    };
    await expect(lock("flaky", options, body)).rejects.toThrow("supplier 503");
    await expect(lock("flaky", options, body)).resolves.toBe("ok");
    await expect(lock("flaky", options, body)).rejects.toBeInstanceOf(Duplicate);
    expect(attempts).toBe(2);
  });

  it("lets the body's error through when release fails too, with the release error as cause", async () => {
    const { backend, logger } = setup();
    const releaseError = new Error("release lost");
    const broken: LockBackend = {
      claim: (k, l) => backend.claim(k, l),
      complete: (c) => backend.complete(c),
      release: async () => {
        throw releaseError;
      },
    };
    const bodyError = new Error("body failed");
    await expect(
      lock("both-fail", { backend: broken, logger }, () => {
        throw bodyError;
      }),
    ).rejects.toBe(bodyError);
    expect(bodyError.cause).toBe(releaseError);
    expect(logger.lines[0]).toMatchObject({
      severity: "ERROR",
      fields: { outcome: "release_failed" },
    });
  });

  it("runs a genuinely new occurrence once the ttl has passed", async () => {
    const { clock, options } = setup();
    const body = vi.fn();
    await lock("ttl", options, body);
    clock.advance(TTL - 1);
    await expect(lock("ttl", options, body)).rejects.toBeInstanceOf(Duplicate);
    clock.advance(1);
    await lock("ttl", options, body);
    expect(body).toHaveBeenCalledTimes(2);
  });

  it("rejects bad keys before any I/O", async () => {
    const { backend, options } = setup();
    const claim = vi.spyOn(backend, "claim");
    const body = vi.fn();
    for (const key of ["", 42, undefined, "é".repeat(MAX_KEY_BYTES / 2 + 1)]) {
      await expect(lock(key as string, options, body)).rejects.toBeInstanceOf(InvalidKey);
    }
    await expect(lock("k".repeat(MAX_KEY_BYTES), options, body)).resolves.toBeUndefined();
    expect(claim).toHaveBeenCalledTimes(1);
    expect(body).toHaveBeenCalledTimes(1);
  });

  it("rejects a bad configuration with a message that names the option", async () => {
    const { backend } = setup();
    await expect(lock("k", { backend, leaseMs: 0 }, () => 1)).rejects.toThrow(/leaseMs/);
    await expect(lock("k", { backend, leaseMs: 1.5 }, () => 1)).rejects.toThrow(/leaseMs/);
    await expect(lock("k", { backend, waitMs: -1 }, () => 1)).rejects.toThrow(/waitMs/);
    await expect(lock("k", { backend: {} as LockBackend }, () => 1)).rejects.toBeInstanceOf(
      InvalidConfiguration,
    );
  });

  it("writes Cloud Logging JSON lines by default", async () => {
    const { backend } = setup();
    const write = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      const broken: LockBackend = {
        claim: (k, l) => backend.claim(k, l),
        complete: async () => {
          throw new Error("boom");
        },
        release: (c) => backend.release(c),
      };
      await lock("json-log", { backend: broken }, () => 1);
      const line = String(write.mock.calls[0]?.[0]);
      expect(line.endsWith("\n")).toBe(true);
      expect(JSON.parse(line)).toMatchObject({
        severity: "ERROR",
        key: "json-log",
        fencingId: 1,
        outcome: "complete_failed",
      });
    } finally {
      write.mockRestore();
    }
  });
});

describe("waitMs", () => {
  it("acks as a duplicate when the holder finishes while we wait", async () => {
    const backend = new InMemoryLock({ ttlMs: TTL });
    const logger = captureLogger();
    const holder = lock(
      "wait-done",
      { backend, logger },
      () => new Promise((r) => setTimeout(r, 30)),
    );
    await ticks();
    const waiter = lock("wait-done", { backend, logger, waitMs: 2_000 }, () => "ran");
    await holder;
    await expect(waiter).rejects.toBeInstanceOf(Duplicate);
  });

  it("wins and runs when the holder's lease lapses while we wait", async () => {
    const backend = new InMemoryLock({ ttlMs: TTL });
    await backend.claim("wait-lapse", 40);
    await expect(
      lock("wait-lapse", { backend, waitMs: 2_000, logger: captureLogger() }, (c) => c.fencingId),
    ).resolves.toBe(2);
  });

  it("still answers InProgress when the wait runs out", async () => {
    const backend = new InMemoryLock({ ttlMs: TTL });
    await backend.claim("wait-out", 60_000);
    await expect(lock("wait-out", { backend, waitMs: 30 }, () => 1)).rejects.toBeInstanceOf(
      InProgress,
    );
  });
});

describe("mutex", () => {
  it("runs every message for a key, one after another, never marking it done", async () => {
    const { backend, options } = setup();
    const fences: number[] = [];
    for (let i = 0; i < 3; i++) await mutex("po:7", options, (c) => fences.push(c.fencingId));
    expect(fences).toEqual([1, 3, 5]);
    expect((await backend.claim("po:7", LEASE)).status).toBe("won");
  });

  it("serializes concurrent messages: none overlap, none is dropped", async () => {
    const backend = new InMemoryLock({ ttlMs: TTL });
    let active = 0;
    let maxActive = 0;
    const applied: number[] = [];
    const update = async (n: number) => {
      // A contended message is nacked and redelivered: retry on InProgress.
      for (;;) {
        try {
          return await mutex(
            "po:serial",
            { backend, leaseMs: 5_000, logger: captureLogger() },
            async () => {
              active++;
              maxActive = Math.max(maxActive, active);
              await new Promise((r) => setTimeout(r, 2));
              applied.push(n);
              active--;
            },
          );
        } catch (error) {
          if (!(error instanceof InProgress)) throw error;
          await new Promise((r) => setTimeout(r, 1));
        }
      }
    };
    await Promise.all(Array.from({ length: 10 }, (_, i) => update(i)));
    expect(maxActive).toBe(1);
    expect([...applied].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it("answers InProgress for a key that lock() completed", async () => {
    const { options } = setup();
    await lock("shared", options, () => 1);
    const body = vi.fn();
    await expect(mutex("shared", options, body)).rejects.toBeInstanceOf(InProgress);
    expect(body).not.toHaveBeenCalled();
  });

  it("releases after a throwing body so the next message runs", async () => {
    const { options } = setup();
    await expect(
      mutex("po:throw", options, () => {
        throw new Error("bad update");
      }),
    ).rejects.toThrow("bad update");
    await expect(mutex("po:throw", options, () => "next")).resolves.toBe("next");
  });
});

describe("heartbeat", () => {
  it("keeps a long body's claim alive past its lease", async () => {
    // Fake timers and clock: with real ones, a busy machine that runs no renewal for 60 ms
    // would lapse the lease and fail this test, though the heartbeat did its job.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const backend = new InMemoryLock({ ttlMs: TTL, now: () => Date.now() });
      const logger = captureLogger();
      let probe: string | undefined;
      const run = lock(
        "long",
        { backend, leaseMs: 60, heartbeat: { everyMs: 15 }, logger },
        async () => {
          await new Promise((r) => setTimeout(r, 200));
          probe = (await backend.claim("long", 60)).status;
        },
      );
      await vi.advanceTimersByTimeAsync(200);
      await run;
      expect(probe).toBe("held");
      expect((await backend.claim("long", 60)).status).toBe("done");
      expect(logger.lines).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("aborts the body's signal and logs when another holder took the key over", async () => {
    const clock = createFakeClock();
    const backend = new InMemoryLock({ ttlMs: TTL, now: clock.now });
    const logger = captureLogger();
    let aborted = false;
    await lock(
      "taken",
      { backend, leaseMs: 100, heartbeat: { everyMs: 5 }, logger },
      async (_c, signal) => {
        // The process stalls past its lease (no renewal got through) and a redelivery reclaims.
        clock.advance(101);
        const other = await backend.claim("taken", 100);
        expect(other.status).toBe("won");
        await new Promise<void>((resolve) => {
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
        aborted = signal.aborted;
      },
    );
    expect(aborted).toBe(true);
    expect(logger.lines.some((l) => l.fields.outcome === "fenced_out")).toBe(true);
  });

  it("stops renewing after maxHoldMs, so a stuck body cannot hold a key forever", async () => {
    const backend = new InMemoryLock({ ttlMs: TTL });
    const logger = captureLogger();
    let probe: string | undefined;
    await lock(
      "capped",
      { backend, leaseMs: 40, heartbeat: { everyMs: 10, maxHoldMs: 30 }, logger },
      async () => {
        await new Promise((r) => setTimeout(r, 150));
        probe = (await backend.claim("capped", 40)).status;
      },
    );
    expect(probe).toBe("won");
    expect(logger.lines.some((l) => l.message.includes("maxHoldMs"))).toBe(true);
  });

  it("is a configuration error at once on a backend without renew", async () => {
    const { backend } = setup();
    const noRenew: LockBackend = {
      claim: vi.fn((k: string, l: number) => backend.claim(k, l)),
      complete: (c: Claim) => backend.complete(c),
      release: (c: Claim) => backend.release(c),
    };
    await expect(lock("hb", { backend: noRenew, heartbeat: true }, () => 1)).rejects.toThrow(
      /heartbeat needs a backend with renew/,
    );
    expect(noRenew.claim).not.toHaveBeenCalled();
  });
});
