import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { InvalidConfiguration } from "../../src/core/errors.js";
import type { ClaimOutcome } from "../../src/core/port.js";
import { lock } from "../../src/core/verbs/lock.js";
import { gatewayDisabled, resetDisabledWarning } from "../../src/surfaces/disabled.js";
import { idempotent, idempotentHttp, idempotentMessage } from "../../src/surfaces/index.js";
import { fakeMessage, pushBody, structuredCloudEvent } from "../../src/testing/index.js";
import { captureLogger } from "./helpers.js";

/** A backend that fails the test if it is ever touched. */
function untouchable() {
  const touched: string[] = [];
  const backend = new InMemoryLock();
  backend.claim = (key: string): Promise<ClaimOutcome> => {
    touched.push(key);
    return Promise.reject(new Error("the backend was touched"));
  };
  return { backend, touched };
}

/** A minimal in-process request/response pair for idempotentHttp. */
function exchange(body: unknown) {
  const res = {
    statusCode: 200,
    writableEnded: false,
    text: "",
    end(chunk?: string) {
      this.text = chunk ?? "";
      this.writableEnded = true;
    },
  };
  return { req: { body }, res };
}

describe("GCP_PUBSUB_IDEMPOTENCY_DISABLED", () => {
  beforeEach(() => resetDisabledWarning());
  afterEach(() => {
    delete process.env.GCP_PUBSUB_IDEMPOTENCY_DISABLED;
  });

  it.each(["1", "true", "TRUE", "yes", "On", " on "])("%j turns it on", (value) => {
    process.env.GCP_PUBSUB_IDEMPOTENCY_DISABLED = value;
    expect(gatewayDisabled()).toBe(true);
  });
  it.each(["", "0", "false", "no", "off", "disabled"])("%j leaves it off", (value) => {
    process.env.GCP_PUBSUB_IDEMPOTENCY_DISABLED = value;
    expect(gatewayDisabled()).toBe(false);
  });

  it("makes all three a pass-through that never touches the backend, warning once", async () => {
    const { backend, touched } = untouchable();
    const logger = captureLogger();
    const enabledFirst = idempotentMessage({ backend, logger }, () => {});
    // Read at call time: a wrapper built before the switch was set obeys it.
    process.env.GCP_PUBSUB_IDEMPOTENCY_DISABLED = "yes";
    let runs = 0;
    const handler = () => {
      runs += 1;
    };
    const ce = idempotent({ backend, logger }, handler);
    const event = structuredCloudEvent("x", { messageId: "d-1" });
    await ce(event);
    await ce(event);
    const http = idempotentHttp({ backend, logger }, handler);
    const a = exchange(pushBody("x", { messageId: "d-1" }));
    await http(a.req, a.res);
    expect(a.res.statusCode).toBe(204);
    const msg = idempotentMessage({ backend, logger }, handler);
    const m = fakeMessage("x", { messageId: "d-1" });
    await msg(m);
    expect(m.settlements).toEqual(["ack"]);
    const early = fakeMessage("x");
    await enabledFirst(early);
    expect(early.settlements).toEqual(["ack"]);
    expect(runs).toBe(4);
    expect(touched).toEqual([]);
    expect(logger.at("WARNING")).toHaveLength(1);
    expect(logger.at("WARNING")[0]?.fields.outcome).toBe("disabled");
  });

  it("still answers 400 to a malformed push body and nacks a throwing handler", async () => {
    process.env.GCP_PUBSUB_IDEMPOTENCY_DISABLED = "1";
    const { backend } = untouchable();
    const logger = captureLogger();
    const http = idempotentHttp({ backend, logger }, () => {});
    const a = exchange({ message: "nope" });
    await http(a.req, a.res);
    expect(a.res.statusCode).toBe(400);
    const m = fakeMessage("x");
    await idempotentMessage({ backend, logger }, () => {
      throw new Error("boom");
    })(m);
    expect(m.settlements).toEqual(["nack"]);
  });
});

describe("hooks and key functions", () => {
  it("a throwing onDuplicate is logged and the duplicate is still acked", async () => {
    const logger = captureLogger();
    const dupes: string[] = [];
    const options = {
      backend: new InMemoryLock(),
      logger,
      onDuplicate: (key: string) => {
        dupes.push(key);
        throw new Error("hook broke");
      },
    };
    const onMessage = idempotentMessage(options, () => {});
    await onMessage(fakeMessage("x", { messageId: "k-1" }));
    const dup = fakeMessage("x", { messageId: "k-1" });
    await onMessage(dup);
    expect(dup.settlements).toEqual(["ack"]);
    expect(dupes).toEqual(["k-1"]);
    expect(logger.at("ERROR")).toHaveLength(1);
    expect(logger.at("ERROR")[0]?.fields).toMatchObject({ outcome: "hook_failed", key: "k-1" });

    // The same on the other two surfaces.
    const ce = idempotent(options, () => {});
    const event = structuredCloudEvent("x", { messageId: "k-2" });
    await ce(event);
    await expect(ce(event)).resolves.toBeUndefined();
    const http = idempotentHttp(options, () => {});
    const body = pushBody("x", { messageId: "k-3" });
    for (let i = 0; i < 2; i += 1) {
      const a = exchange(body);
      await http(a.req, a.res);
      expect(a.res.statusCode).toBe(204);
    }
    expect(dupes).toEqual(["k-1", "k-2", "k-3"]);
  });

  it("a throwing key function propagates: reject, 500, nack; the handler never runs", async () => {
    const logger = captureLogger();
    const broken = new Error("key broke");
    let runs = 0;
    const handler = () => {
      runs += 1;
    };
    const key = () => {
      throw broken;
    };
    const backend = new InMemoryLock();
    await expect(
      idempotent({ backend, logger, key }, handler)(structuredCloudEvent("x")),
    ).rejects.toBe(broken);
    const a = exchange(pushBody("x"));
    await idempotentHttp({ backend, logger, key }, handler)(a.req, a.res);
    expect(a.res.statusCode).toBe(500);
    const m = fakeMessage("x");
    await idempotentMessage({ backend, logger, key }, handler)(m);
    expect(m.settlements).toEqual(["nack"]);
    expect(runs).toBe(0);
  });

  it("allowUnguarded runs unkeyed messages on every surface, with a warning each", async () => {
    const logger = captureLogger();
    const backend = new InMemoryLock();
    let runs = 0;
    const options = { backend, logger, allowUnguarded: true, key: () => undefined };
    const handler = () => {
      runs += 1;
    };
    await idempotent(options, handler)(structuredCloudEvent("x"));
    const a = exchange(pushBody("x"));
    await idempotentHttp(options, handler)(a.req, a.res);
    expect(a.res.statusCode).toBe(204);
    const m = fakeMessage("x");
    await idempotentMessage(options, handler)(m);
    expect(m.settlements).toEqual(["ack"]);
    expect(runs).toBe(3);
    expect(logger.at("WARNING").map((l) => l.fields.outcome)).toEqual([
      "unguarded",
      "unguarded",
      "unguarded",
    ]);
  });

  it("waitMs lets a redelivery wait out a short holder and then see the duplicate", async () => {
    const logger = captureLogger();
    let runs = 0;
    const options = { backend: new InMemoryLock(), logger, waitMs: 2_000 };
    const onMessage = idempotentMessage(options, async () => {
      runs += 1;
      await new Promise((r) => setTimeout(r, 50));
    });
    const a = fakeMessage("x", { messageId: "w-1" });
    const b = fakeMessage("x", { messageId: "w-1" });
    await Promise.all([onMessage(a), onMessage(b)]);
    expect(runs).toBe(1);
    expect([...a.settlements, ...b.settlements]).toEqual(["ack", "ack"]);
    expect(logger.at("WARNING")).toEqual([]);
  });
});

describe("wiring mistakes", () => {
  it("are refused when the function is built, not on the first message", () => {
    const backend = new InMemoryLock();
    const cases: [string, () => unknown][] = [
      ["no backend", () => idempotent({} as never, () => {})],
      [
        "a backend without complete",
        () => idempotentMessage({ backend: { claim() {} } as never }, () => {}),
      ],
      ["no handler", () => idempotentHttp({ backend }, undefined as never)],
      ["key not a function", () => idempotent({ backend, key: "id" as never }, () => {})],
      [
        "onDuplicate not a function",
        () => idempotentMessage({ backend, onDuplicate: 1 as never }, () => {}),
      ],
      ["maxBodyBytes zero", () => idempotentHttp({ backend, maxBodyBytes: 0 }, () => {})],
    ];
    for (const [name, build] of cases) {
      expect(build, name).toThrow(InvalidConfiguration);
    }
  });
});

describe("options are checked when the function is built", () => {
  const backend = new InMemoryLock();
  const noRenew = { claim: backend.claim, complete: backend.complete, release: backend.release };
  const bad: [string, Record<string, unknown>, RegExp][] = [
    ["leaseMs -1", { leaseMs: -1 }, /leaseMs/],
    ["leaseMs NaN", { leaseMs: Number.NaN }, /leaseMs/],
    ["leaseMs MAX_SAFE_INTEGER", { leaseMs: Number.MAX_SAFE_INTEGER }, /leaseMs/],
    ["waitMs -5", { waitMs: -5 }, /waitMs/],
    ["waitMs '10'", { waitMs: "10" }, /waitMs/],
    ["heartbeat without renew", { backend: noRenew, heartbeat: true }, /renew/],
    ['allowUnguarded "false"', { allowUnguarded: "false" }, /allowUnguarded/],
    ['heartbeat "false"', { heartbeat: "false" }, /heartbeat/],
    ["heartbeat 0", { heartbeat: 0 }, /heartbeat/],
    ["heartbeat null", { heartbeat: null }, /heartbeat/],
    ["heartbeat.everyMs Infinity", { heartbeat: { everyMs: Infinity } }, /everyMs/],
    ["logger {}", { logger: {} }, /logger/],
    ["logger with a string info", { logger: { info: "x", warn() {}, error() {} } }, /logger/],
    ["key 'messageId'", { key: "messageId" }, /key/],
    ["onDuplicate true", { onDuplicate: true }, /onDuplicate/],
    ["backend.renew not a function", { backend: { ...noRenew, renew: 1 } }, /renew/],
    ["maxBodyBytes 0", { maxBodyBytes: 0 }, /maxBodyBytes/],
    ["maxBodyBytes 1.5", { maxBodyBytes: 1.5 }, /maxBodyBytes/],
  ];
  for (const [name, extra, names] of bad) {
    it(`${name}: InvalidConfiguration naming it, from every surface`, () => {
      const options = { backend, ...extra } as never;
      const surfaces = [
        () => idempotentHttp(options, () => {}),
        ...(name.startsWith("maxBodyBytes")
          ? []
          : [() => idempotent(options, () => {}), () => idempotentMessage(options, () => {})]),
      ];
      for (const build of surfaces) {
        let error: unknown;
        try {
          build();
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(InvalidConfiguration);
        expect((error as Error).message).toMatch(names);
      }
    });
  }

  it("an options object whose getters throw is a configuration error, not a TypeError", () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error("trap");
        },
      },
    );
    expect(() => idempotentHttp(hostile as never, () => {})).toThrow(InvalidConfiguration);
    expect(() => idempotentMessage(hostile as never, () => {})).toThrow(/could not be read/);
  });
});

describe("a surface checks its lock options with the verbs' own checks", () => {
  /** The message a refused call or build throws, or a note that nothing was thrown. */
  const refusal = async (run: () => unknown): Promise<string> => {
    try {
      await run();
      return "nothing thrown";
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidConfiguration);
      return (error as Error).message;
    }
  };

  it("refuses each bad option with the words lock() uses, naming the surface", async () => {
    const backend = new InMemoryLock();
    const bad: [string, Record<string, unknown>][] = [
      ["no backend", {}],
      ["a backend without release", { backend: { claim() {}, complete() {} } }],
      ["leaseMs 0", { backend, leaseMs: 0 }],
      ["waitMs -1", { backend, waitMs: -1 }],
      ["heartbeat 'yes'", { backend, heartbeat: "yes" }],
      ["logger without error", { backend, logger: { info() {}, warn() {} } }],
    ];
    for (const [name, options] of bad) {
      const fromLock = await refusal(() => lock("k", options as never, () => {}));
      expect(fromLock, name).not.toBe("nothing thrown");
      const surfaces: [string, () => unknown][] = [
        ["idempotent()", () => idempotent(options as never, () => {})],
        ["idempotentHttp()", () => idempotentHttp(options as never, () => {})],
        ["idempotentMessage()", () => idempotentMessage(options as never, () => {})],
      ];
      for (const [where, build] of surfaces) {
        expect(await refusal(build), `${name}, ${where}`).toBe(fromLock.replace("lock()", where));
      }
    }
  });

  it("refuses a missing handler as lock() refuses a missing body", async () => {
    const backend = new InMemoryLock();
    expect(await refusal(() => lock("k", { backend }, 42 as never))).toBe(
      "lock() needs a body function, got number 42",
    );
    expect(await refusal(() => idempotentMessage({ backend }, 42 as never))).toBe(
      "idempotentMessage() needs a handler function, got number 42",
    );
  });
});
