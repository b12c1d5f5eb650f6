// Spans and metrics of the verbs, with the real OpenTelemetry SDK and in-memory exporters, on
// real stores: memory, Redis (own key prefix) and PostgreSQL (own database and table).
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { SqlLock } from "../../src/backends/sql/index.js";
import {
  type Claim,
  Duplicate,
  InProgress,
  InvalidConfiguration,
  type LockBackend,
  lock,
  lockInTransaction,
  mutex,
} from "../../src/index.js";
import { captureLogger, silentLogger } from "../support/logger.js";
import {
  parentOf,
  type TelemetryHarness,
  telemetryHarness,
  trace,
  useContextManager,
} from "../support/telemetry.js";
import { telemetryStores } from "../support/telemetry-stores.js";

const run = `otel${Date.now().toString(36)}`;
const setup = await telemetryStores(run);
const { stores, postgres } = setup;

beforeAll(async () => {
  useContextManager();
  await setup.open();
});

afterAll(async () => {
  await setup.close();
});

let n = 0;
const freshKey = () => `k-${++n}`;

/** Let a short lease lapse and reclaim the key elsewhere, so the running body is fenced out. */
async function reclaimElsewhere(backend: LockBackend, key: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const outcome = await backend.claim(key, 60_000);
    if (outcome.status === "won") return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the short lease never lapsed");
}

describe.each(stores)("telemetry of the verbs on $name", (store) => {
  let otel: TelemetryHarness;
  let backend: LockBackend;
  const options = () => ({
    backend,
    logger: silentLogger,
    telemetry: { tracerProvider: otel.tracerProvider, meterProvider: otel.meterProvider },
  });

  beforeEach(async () => {
    otel = telemetryHarness();
    backend = await store.make();
  });

  it("ran: a verb span with claim and complete children, the fence, the wait, and no key", async () => {
    const key = freshKey();
    let fence = 0;
    await lock(key, options(), async (claim) => {
      fence = claim.fencingId;
    });
    const verb = otel.span("gcp-pubsub-idempotency lock");
    const claim = otel.span("gcp-pubsub-idempotency claim");
    const complete = otel.span("gcp-pubsub-idempotency complete");
    expect(verb.attributes).toMatchObject({
      "idempotency.outcome": "ran",
      "idempotency.verb": "lock",
      "idempotency.backend": store.backendName,
      "idempotency.fencing_id": fence,
    });
    expect(verb.attributes["idempotency.key"]).toBeUndefined();
    expect(verb.attributes["idempotency.waited_ms"]).toBeTypeOf("number");
    expect(verb.kind).toBe(SpanKind.INTERNAL);
    expect(verb.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(parentOf(claim)).toBe(verb.spanContext().spanId);
    expect(parentOf(complete)).toBe(verb.spanContext().spanId);
    expect(claim.attributes["idempotency.claim.status"]).toBe("won");
    expect(await otel.outcomes()).toEqual({ [`ran|${store.backendName}|lock`]: 1 });
    const claims = await otel.points("idempotency.claim.duration");
    const bodies = await otel.points("idempotency.body.duration");
    expect(claims.map((p) => (p.value as { count: number }).count)).toEqual([1]);
    expect(bodies.map((p) => (p.value as { count: number }).count)).toEqual([1]);
  });

  it("duplicate, held, failed: each an outcome; a failure marks the span and records the error", async () => {
    const key = freshKey();
    await lock(key, options(), async () => {});
    await expect(lock(key, options(), async () => {})).rejects.toBeInstanceOf(Duplicate);
    const held = freshKey();
    await backend.claim(held, 60_000);
    await expect(lock(held, options(), async () => {})).rejects.toBeInstanceOf(InProgress);
    await expect(
      lock(freshKey(), options(), async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");

    const verbs = otel.spans().filter((s) => s.name === "gcp-pubsub-idempotency lock");
    expect(verbs.map((s) => s.attributes["idempotency.outcome"])).toEqual([
      "ran",
      "duplicate",
      "held",
      "failed",
    ]);
    const failed = verbs[3];
    expect(failed?.status).toEqual({ code: SpanStatusCode.ERROR, message: "Error: boom" });
    expect(failed?.events.map((e) => [e.name, e.attributes?.["exception.message"]])).toEqual([
      ["exception", "Error: boom"],
    ]);
    // The failed body released its claim: a release child under that span.
    const release = otel.span("gcp-pubsub-idempotency release");
    expect(parentOf(release)).toBe(failed?.spanContext().spanId);
    expect(await otel.outcomes()).toEqual({
      [`ran|${store.backendName}|lock`]: 1,
      [`duplicate|${store.backendName}|lock`]: 1,
      [`held|${store.backendName}|lock`]: 1,
      [`failed|${store.backendName}|lock`]: 1,
    });
  });

  it("fenced_out: the lease lapsed and the key was reclaimed while the body ran", async () => {
    const key = freshKey();
    await lock(key, { ...options(), leaseMs: 50 }, async () => reclaimElsewhere(backend, key));
    const verb = otel.span("gcp-pubsub-idempotency lock");
    expect(verb.attributes["idempotency.outcome"]).toBe("fenced_out");
    expect(verb.status.code).toBe(SpanStatusCode.ERROR);
    expect(otel.span("gcp-pubsub-idempotency complete").attributes["idempotency.fenced_out"]).toBe(
      true,
    );
    expect(await otel.outcomes()).toEqual({ [`fenced_out|${store.backendName}|lock`]: 1 });
  });

  it("mutex: claim and release children; a held key is held; waitMs shows as time waited", async () => {
    const key = freshKey();
    let fence = 0;
    await mutex(key, options(), async (claim) => {
      fence = claim.fencingId;
    });
    const held = freshKey();
    await backend.claim(held, 60_000);
    await expect(mutex(held, { ...options(), waitMs: 60 }, async () => {})).rejects.toBeInstanceOf(
      InProgress,
    );
    const verbs = otel.spans().filter((s) => s.name === "gcp-pubsub-idempotency mutex");
    expect(verbs.map((s) => s.attributes["idempotency.outcome"])).toEqual(["ran", "held"]);
    expect(verbs[1]?.attributes["idempotency.waited_ms"]).toBeGreaterThanOrEqual(55);
    expect(otel.spans().filter((s) => s.name.endsWith(" claim")).length).toBeGreaterThan(2);
    expect(otel.span("gcp-pubsub-idempotency release").attributes["idempotency.fencing_id"]).toBe(
      fence,
    );
    expect(await otel.outcomes()).toEqual({
      [`ran|${store.backendName}|mutex`]: 1,
      [`held|${store.backendName}|mutex`]: 1,
    });
  });

  it("recordKey puts the key on the span; spans of the body are children of the verb's", async () => {
    const key = freshKey();
    await lock(
      key,
      { ...options(), telemetry: { tracerProvider: otel.tracerProvider, recordKey: true } },
      async () => {
        otel.tracerProvider.getTracer("app").startSpan("inside").end();
      },
    );
    const verb = otel.span("gcp-pubsub-idempotency lock");
    expect(verb.attributes["idempotency.key"]).toBe(key);
    expect(parentOf(otel.span("inside"))).toBe(verb.spanContext().spanId);
  });

  it("telemetry: false records nothing", async () => {
    await lock(freshKey(), { ...options(), telemetry: false }, async () => {});
    expect(otel.spans()).toEqual([]);
    expect(await otel.outcomes()).toEqual({});
  });
});

describe.skipIf(postgres === undefined)("telemetry of lockInTransaction on PostgreSQL", () => {
  it("ran, duplicate and a failed body: one lockInTransaction span each, complete as a child", async () => {
    const otel = telemetryHarness();
    const backend = new SqlLock({ client: setup.pool(), table: `${run}_tx` });
    await backend.ensureSchema();
    const options = {
      backend,
      logger: silentLogger,
      telemetry: { tracerProvider: otel.tracerProvider, meterProvider: otel.meterProvider },
    };
    const key = freshKey();
    await lockInTransaction(key, options, async (tx) => {
      await tx.query("SELECT 1");
    });
    await expect(lockInTransaction(key, options, async () => {})).rejects.toBeInstanceOf(Duplicate);
    await expect(
      lockInTransaction(freshKey(), options, async () => {
        throw new Error("no");
      }),
    ).rejects.toThrow("no");
    const verbs = otel.spans().filter((s) => s.name === "gcp-pubsub-idempotency lockInTransaction");
    expect(verbs.map((s) => s.attributes["idempotency.outcome"])).toEqual([
      "ran",
      "duplicate",
      "failed",
    ]);
    const completes = otel.spans().filter((s) => s.name === "gcp-pubsub-idempotency complete");
    expect(parentOf(completes[0] as never)).toBe(verbs[0]?.spanContext().spanId);
    expect(await otel.outcomes()).toEqual({
      "ran|SqlLock|lockInTransaction": 1,
      "duplicate|SqlLock|lockInTransaction": 1,
      "failed|SqlLock|lockInTransaction": 1,
    });
  });
});

/** InMemoryLock whose complete fails: the store error after the body succeeded. */
class CompleteFails extends InMemoryLock {
  override async complete(_claim: Claim): Promise<boolean> {
    throw new Error("store down");
  }
}

describe("telemetry edges", () => {
  beforeAll(() => useContextManager());

  it("complete_failed: logged and counted, the span marked failed, the call resolves", async () => {
    const otel = telemetryHarness();
    const logger = captureLogger();
    await lock(
      "k",
      {
        backend: new CompleteFails(),
        logger,
        telemetry: { tracerProvider: otel.tracerProvider, meterProvider: otel.meterProvider },
      },
      async () => {},
    );
    const verb = otel.span("gcp-pubsub-idempotency lock");
    expect(verb.attributes["idempotency.outcome"]).toBe("complete_failed");
    expect(verb.status.code).toBe(SpanStatusCode.ERROR);
    const complete = otel.span("gcp-pubsub-idempotency complete");
    expect(complete.status).toEqual({ code: SpanStatusCode.ERROR, message: "Error: store down" });
    expect(await otel.outcomes()).toEqual({ "complete_failed|CompleteFails|lock": 1 });
    // The error line carries the verb span's trace fields.
    const [line] = logger.at("ERROR");
    expect(line?.fields).toMatchObject({
      outcome: "complete_failed",
      "logging.googleapis.com/spanId": verb.spanContext().spanId,
      "logging.googleapis.com/trace_sampled": true,
    });
  });

  it("heartbeat renewals are children of the verb span", async () => {
    const otel = telemetryHarness();
    await lock(
      "hb",
      {
        backend: new InMemoryLock(),
        logger: silentLogger,
        leaseMs: 60,
        heartbeat: { everyMs: 15 },
        telemetry: { tracerProvider: otel.tracerProvider },
      },
      async () => new Promise((r) => setTimeout(r, 80)),
    );
    const verb = otel.span("gcp-pubsub-idempotency lock");
    const renews = otel.spans().filter((s) => s.name === "gcp-pubsub-idempotency renew");
    expect(renews.length).toBeGreaterThan(0);
    for (const renew of renews) expect(parentOf(renew)).toBe(verb.spanContext().spanId);
  });

  it("a verb inside an active span of the caller becomes its child", async () => {
    const otel = telemetryHarness();
    const tracer = otel.tracerProvider.getTracer("app");
    await tracer.startActiveSpan("request", async (outer) => {
      await lock(
        "nested",
        {
          backend: new InMemoryLock(),
          logger: silentLogger,
          telemetry: { tracerProvider: otel.tracerProvider },
        },
        async () => {},
      );
      outer.end();
    });
    expect(parentOf(otel.span("gcp-pubsub-idempotency lock"))).toBe(
      otel.span("request").spanContext().spanId,
    );
    expect(trace.getActiveSpan()).toBeUndefined();
  });

  it.each([
    [{ tracerProvider: {} }, "options.telemetry.tracerProvider must be an OpenTelemetry provider"],
    [{ meterProvider: 1 }, "options.telemetry.meterProvider must be an OpenTelemetry provider"],
    [{ recordKey: "yes" }, "options.telemetry.recordKey must be true or false"],
    [{ projectId: "Bad Project" }, "options.telemetry.projectId must be a Google Cloud project id"],
    [{ projectId: 7 }, "options.telemetry.projectId must be a Google Cloud project id"],
    ["on", "options.telemetry must be false, true or"],
    [null, "options.telemetry must be false, true or"],
    [[], "options.telemetry must be false, true or"],
  ])("refuses telemetry %j before any I/O, naming the field", async (telemetry, message) => {
    const backend = new InMemoryLock();
    await expect(
      lock("k", { backend, telemetry: telemetry as never }, async () => {}),
    ).rejects.toThrow(InvalidConfiguration);
    await expect(
      lock("k", { backend, telemetry: telemetry as never }, async () => {}),
    ).rejects.toThrow(message);
    expect(await backend.inspect("k")).toBeUndefined();
  });

  it("refuses a telemetry object whose getters throw, naming the option", async () => {
    const telemetry = new Proxy(
      {},
      {
        get() {
          throw new Error("trap");
        },
      },
    );
    await expect(
      lock("k", { backend: new InMemoryLock(), telemetry }, async () => {}),
    ).rejects.toThrow("lock() options.telemetry option tracerProvider could not be read");
  });
});
