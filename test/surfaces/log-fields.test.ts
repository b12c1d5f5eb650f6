// One log shape: every line about a delivery, on every surface and for every outcome, names
// the message the same way (key, messageId, subscription, deliveryAttempt, outcome, reason),
// in that order, and leaves out what the message lacks instead of writing undefined.
import { describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import type { Claim, LockBackend } from "../../src/core/port.js";
import type { LogFields } from "../../src/core/types.js";
import {
  type HttpRequestLike,
  type HttpResponseLike,
  idempotent,
  idempotentHttp,
  idempotentMessage,
} from "../../src/surfaces/index.js";
import { fakeMessage, pushBody, structuredCloudEvent } from "../../src/testing/index.js";
import { captureLogger, type LogLine } from "../support/logger.js";
import { gate } from "./helpers.js";

const SUBSCRIPTION = "projects/test-project/subscriptions/orders";
const ORDER = ["key", "messageId", "subscription", "deliveryAttempt", "outcome", "reason"];

type Outcome = "done" | "duplicate" | "held" | "failed" | "fenced_out" | "unkeyed" | "malformed";
type Surface = "idempotentHttp" | "idempotent" | "idempotentMessage";

interface Setup {
  backend?: LockBackend;
  key?: () => undefined;
  handler?: () => unknown;
}

/** Deliver message `id` once through `surface`; resolves when the surface has answered. */
function surfaceOf(surface: Surface, setup: Setup, logger: ReturnType<typeof captureLogger>) {
  const options = {
    backend: setup.backend ?? new InMemoryLock(),
    logger,
    ...(setup.key ? { key: setup.key } : {}),
  };
  const handler = setup.handler ?? (() => undefined);
  const fields = { messageId: "m-1", subscription: SUBSCRIPTION, deliveryAttempt: 3 };
  switch (surface) {
    case "idempotentHttp": {
      const fn = idempotentHttp(options, handler);
      return (body: unknown = pushBody("x", fields)) =>
        fn({ body, headers: { "content-type": "application/json" } }, response());
    }
    case "idempotent": {
      const fn = idempotent(options, handler);
      // A cloudEvent function rejects on anything but done or duplicate: that is its answer.
      return () => fn(structuredCloudEvent("x", fields)).catch(() => undefined);
    }
    case "idempotentMessage": {
      const fn = idempotentMessage(options, handler);
      return () => fn(fakeMessage("x", fields));
    }
  }
}

function response(): HttpResponseLike {
  return { statusCode: 0, setHeader() {}, end() {} };
}

/** The fields a line about message m-1 carries on `surface` (a pull Message names no subscription). */
function named(surface: Surface, key: boolean): LogFields {
  return {
    ...(key ? { key: "m-1" } : {}),
    messageId: "m-1",
    ...(surface === "idempotentMessage" ? {} : { subscription: SUBSCRIPTION }),
    deliveryAttempt: 3,
  };
}

/** The line's fields hold `expected`, in the documented order, and no field is undefined. */
function expectShape(line: LogLine | undefined, expected: LogFields): void {
  expect(line).toBeDefined();
  const fields = line?.fields ?? {};
  expect(fields).toMatchObject(expected);
  for (const name of ORDER) if (!(name in expected)) expect(fields).not.toHaveProperty(name);
  const present = Object.keys(fields).filter((name) => ORDER.includes(name));
  expect(present).toEqual(ORDER.filter((name) => name in fields));
  expect(Object.values(fields)).not.toContain(undefined);
}

/** A backend whose complete() finds the claim fenced out: the body outran its lease. */
function fencedOut(): LockBackend {
  const inner = new InMemoryLock();
  return {
    claim: (key, leaseMs) => inner.claim(key, leaseMs),
    complete: async () => false,
    release: (claim: Claim) => inner.release(claim),
  };
}

/** A backend whose complete() throws: the body ran and the delivery still ends done (acked). */
function completeFails(): LockBackend {
  const inner = new InMemoryLock();
  return {
    claim: (key, leaseMs) => inner.claim(key, leaseMs),
    complete: () => Promise.reject(new Error("store gone")),
    release: (claim: Claim) => inner.release(claim),
  };
}

const SURFACES: Surface[] = ["idempotentHttp", "idempotent", "idempotentMessage"];

/** Run one outcome on one surface; the line of that outcome, or undefined when none is written. */
const OUTCOMES: Record<
  Outcome,
  (
    surface: Surface,
  ) => Promise<{ lines: LogLine[]; line: LogLine | undefined; expected: LogFields }>
> = {
  async done(surface) {
    // A clean done writes nothing; the only line a done delivery can write is complete_failed.
    const clean = captureLogger();
    await surfaceOf(surface, {}, clean)();
    expect(clean.lines).toEqual([]);
    const logger = captureLogger();
    await surfaceOf(surface, { backend: completeFails() }, logger)();
    const line = logger.lines.find((l) => l.fields.outcome === "complete_failed");
    return {
      lines: logger.lines,
      line,
      expected: {
        ...named(surface, true),
        outcome: "complete_failed",
        reason: "Error: store gone",
      },
    };
  },
  async duplicate(surface) {
    const logger = captureLogger();
    const deliver = surfaceOf(surface, {}, logger);
    await deliver();
    await deliver();
    const line = logger.lines.find((l) => l.fields.outcome === "duplicate");
    return {
      lines: logger.lines,
      line,
      expected: { ...named(surface, true), outcome: "duplicate" },
    };
  },
  async held(surface) {
    const logger = captureLogger();
    const hold = gate();
    const started = gate();
    const deliver = surfaceOf(
      surface,
      {
        handler: async () => {
          started.open();
          await hold.promise;
        },
      },
      logger,
    );
    const first = deliver();
    await started.promise;
    await deliver();
    hold.open();
    await first;
    const line = logger.lines.find((l) => l.fields.outcome === "held");
    return {
      lines: logger.lines,
      line,
      expected: {
        ...named(surface, true),
        outcome: "held",
        reason: expect.stringContaining("m-1"),
      },
    };
  },
  async failed(surface) {
    const logger = captureLogger();
    await surfaceOf(
      surface,
      {
        handler: () => {
          throw new Error("boom");
        },
      },
      logger,
    )();
    const line = logger.lines.find((l) => l.fields.outcome === "failed");
    if (surface === "idempotent") {
      // functions-framework logs a cloudEvent function's throw itself: the gateway adds none.
      expect(line).toBeUndefined();
      return { lines: logger.lines, line: undefined, expected: {} };
    }
    return {
      lines: logger.lines,
      line,
      expected: { ...named(surface, true), outcome: "failed", reason: "Error: boom" },
    };
  },
  async fenced_out(surface) {
    const logger = captureLogger();
    await surfaceOf(surface, { backend: fencedOut() }, logger)();
    const line = logger.lines.find((l) => l.fields.outcome === "fenced_out");
    expect(line?.fields).toMatchObject({ alert: true, fencingId: 1 });
    return {
      lines: logger.lines,
      line,
      expected: { ...named(surface, true), outcome: "fenced_out" },
    };
  },
  async unkeyed(surface) {
    const logger = captureLogger();
    await surfaceOf(surface, { key: () => undefined }, logger)();
    const line = logger.lines.find((l) => l.fields.outcome === "unkeyed");
    const reason = expect.stringMatching(
      /^the key function \(options\.key\) returned undefined for this message \(read as /,
    );
    return {
      lines: logger.lines,
      line,
      expected: { ...named(surface, false), outcome: "unkeyed", reason },
    };
  },
  async malformed(surface) {
    const logger = captureLogger();
    if (surface !== "idempotentHttp") {
      // A CloudEvent or a pull Message is parsed by the handler, not the gateway: no such line.
      return { lines: logger.lines, line: undefined, expected: {} };
    }
    const body = pushBody("x", {
      messageId: "m-1",
      subscription: SUBSCRIPTION,
      deliveryAttempt: 3,
    });
    const bad = { ...body, message: { ...body.message, data: "***" } };
    await surfaceOf(surface, {}, logger)(bad);
    const line = logger.lines.find((l) => l.fields.outcome === "malformed");
    return {
      lines: logger.lines,
      line,
      expected: {
        ...named(surface, false),
        outcome: "malformed",
        reason: "malformed Pub/Sub push envelope: message.data is not valid base64",
      },
    };
  },
};

describe.each(SURFACES)("the log lines of %s", (surface) => {
  it.each(Object.keys(OUTCOMES) as Outcome[])("%s: the line names the message", async (outcome) => {
    const { line, expected } = await OUTCOMES[outcome](surface);
    if (line === undefined && Object.keys(expected).length === 0) return; // no line on this surface
    expectShape(line, expected);
  });
});

describe("lines a surface writes for one message", () => {
  it("a failed delivery and its redelivery as a duplicate name the same message", async () => {
    const logger = captureLogger();
    let fail = true;
    const fn = idempotentHttp({ backend: new InMemoryLock(), logger }, () => {
      if (fail) {
        fail = false;
        throw new Error("transient");
      }
    });
    const body = pushBody("x", { messageId: "m-9", subscription: SUBSCRIPTION });
    const req: HttpRequestLike = { body, headers: { "content-type": "application/json" } };
    await fn(req, response());
    await fn(req, response());
    await fn(req, response());
    const ids = logger.lines.map((l) => [l.fields.outcome, l.fields.key, l.fields.messageId]);
    expect(ids).toEqual([
      ["failed", "m-9", "m-9"],
      ["duplicate", "m-9", "m-9"],
    ]);
  });
});

describe("a field the message lacks is left out, never undefined", () => {
  it.each(SURFACES)("%s: a duplicate without deliveryAttempt", async (surface) => {
    const logger = captureLogger();
    const fields = { messageId: "m-2", subscription: SUBSCRIPTION };
    const options = { backend: new InMemoryLock(), logger };
    const deliver =
      surface === "idempotentHttp"
        ? () =>
            idempotentHttp(options, () => undefined)(
              { body: pushBody("x", fields), headers: {} },
              response(),
            )
        : surface === "idempotent"
          ? () => idempotent(options, () => undefined)(structuredCloudEvent("x", fields))
          : () => idempotentMessage(options, () => undefined)(fakeMessage("x", fields));
    // One backend, so the second delivery is the duplicate.
    await deliver();
    await deliver();
    const line = logger.lines.find((l) => l.fields.outcome === "duplicate");
    expect(line?.fields).toBeDefined();
    expect(Object.keys(line?.fields ?? {})).not.toContain("deliveryAttempt");
    // A pull Message names no subscription: the key is absent, not undefined.
    expect("subscription" in (line?.fields ?? {})).toBe(surface !== "idempotentMessage");
  });
});
