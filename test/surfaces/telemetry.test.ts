// Delivery spans and metrics of the three surfaces with the real OpenTelemetry SDK, on memory,
// Redis (own prefix) and PostgreSQL (own database); the trace each carrier continues; the
// Cloud Logging trace fields on every line.
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import {
  type CloudEventLike,
  type HttpResponseLike,
  idempotent,
  idempotentHttp,
  idempotentMessage,
  type LockBackend,
  type Logger,
} from "../../src/index.js";
import { fakeMessage, pushRequest, structuredCloudEvent } from "../../src/testing/index.js";
import { captureLogger, silentLogger } from "../support/logger.js";
import {
  parentOf,
  type TelemetryHarness,
  telemetryHarness,
  useContextManager,
} from "../support/telemetry.js";
import { telemetryStores } from "../support/telemetry-stores.js";

const run = `otels${Date.now().toString(36)}`;
const setup = await telemetryStores(run);
const { stores } = setup;

beforeAll(async () => {
  useContextManager();
  await setup.open();
});

afterAll(async () => {
  await setup.close();
});

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID = "00f067aa0ba902b7";
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_ID}-01`;
const DELIVERY = "process gcp_pubsub";

let n = 0;
const nextId = () => `${run}-m${++n}`;

describe.each(stores)("pull deliveries on $name", (store) => {
  let otel: TelemetryHarness;
  let backend: LockBackend;
  beforeEach(async () => {
    otel = telemetryHarness();
    backend = await store.make();
  });
  const telemetry = () => ({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  });

  it("every outcome: a CONSUMER span per delivery, the verb span under it, counted once", async () => {
    const listener = idempotentMessage(
      {
        backend,
        logger: silentLogger,
        telemetry: telemetry(),
        key: (m) => m.attributes?.order,
      },
      async (m) => {
        if (m.attributes?.fail) throw new Error("handler failed");
      },
    );
    const held = `${run}-held-${store.name}`;
    await backend.claim(held, 60_000);
    const id = nextId();
    const first = fakeMessage("a", {
      messageId: id,
      attributes: { order: id, googclient_traceparent: TRACEPARENT },
    });
    await listener(first);
    await listener(fakeMessage("a", { messageId: id, attributes: { order: id } }));
    await listener(fakeMessage("b", { attributes: { order: held } }));
    await listener(fakeMessage("c", { attributes: { order: nextId(), fail: "1" } }));
    await listener(fakeMessage("d", { attributes: {} }));
    await listener(fakeMessage("e", { attributes: { order: "bad\u0000key" } }));

    const deliveries = otel.spans().filter((s) => s.name === DELIVERY);
    expect(deliveries.map((s) => s.attributes["idempotency.outcome"])).toEqual([
      "ran",
      "duplicate",
      "held",
      "failed",
      "unkeyed",
      "invalid_key",
    ]);
    const [ran, , , failed] = deliveries;
    expect(ran?.kind).toBe(SpanKind.CONSUMER);
    expect(ran?.attributes).toMatchObject({
      "messaging.system": "gcp_pubsub",
      "messaging.operation.type": "process",
      "messaging.message.id": id,
      "idempotency.surface": "idempotentMessage",
      "idempotency.backend": store.backendName,
      "idempotency.verb": "lock",
    });
    expect(ran?.attributes["idempotency.key"]).toBeUndefined();
    // The first message carried the publisher's context: the delivery continues its trace.
    expect(ran?.spanContext().traceId).toBe(TRACE_ID);
    expect(parentOf(ran as never)).toBe(PARENT_ID);
    expect(failed?.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: "Error: handler failed",
    });
    const verbs = otel.spans().filter((s) => s.name === "gcp-pubsub-idempotency lock");
    expect(verbs.length).toBe(4); // unkeyed and invalid_key never reach the verb
    expect(parentOf(verbs[0] as never)).toBe(ran?.spanContext().spanId);
    expect(verbs[0]?.spanContext().traceId).toBe(TRACE_ID);
    const b = store.backendName;
    expect(await otel.outcomes()).toEqual({
      [`ran|${b}|lock`]: 1,
      [`duplicate|${b}|lock`]: 1,
      [`held|${b}|lock`]: 1,
      [`failed|${b}|lock`]: 1,
      [`unkeyed|${b}|lock`]: 1,
      [`invalid_key|${b}|lock`]: 1,
    });
    const bodies = await otel.points("idempotency.body.duration");
    expect(bodies.map((p) => (p.value as { count: number }).count)).toEqual([2]);
  });

  it("fenced_out: a delivery whose handler outran its lease says so", async () => {
    const id = nextId();
    const listener = idempotentMessage(
      { backend, logger: silentLogger, leaseMs: 50, telemetry: telemetry() },
      async () => {
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline) {
          if ((await backend.claim(id, 60_000)).status === "won") return;
          await new Promise((r) => setTimeout(r, 20));
        }
      },
    );
    await listener(fakeMessage("x", { messageId: id }));
    expect(otel.span(DELIVERY).attributes["idempotency.outcome"]).toBe("fenced_out");
    expect(await otel.outcomes()).toEqual({ [`fenced_out|${store.backendName}|lock`]: 1 });
  });
});

describe("trace continuation from each carrier", () => {
  let otel: TelemetryHarness;
  beforeEach(() => {
    otel = telemetryHarness();
  });
  const res = (): HttpResponseLike => ({ statusCode: 0, end: () => undefined });

  it("push: the traceparent header wins over the message attribute; subscription recorded", async () => {
    const handler = idempotentHttp(
      {
        backend: new InMemoryLock(),
        logger: silentLogger,
        telemetry: { tracerProvider: otel.tracerProvider },
      },
      () => undefined,
    );
    const other = `00-${"1".repeat(32)}-${"2".repeat(16)}-01`;
    const request = pushRequest({}, { attributes: { googclient_traceparent: other } });
    await handler({ ...request, headers: { ...request.headers, traceparent: TRACEPARENT } }, res());
    const span = otel.span("process projects/test-project/subscriptions/test-sub");
    expect(span.spanContext().traceId).toBe(TRACE_ID);
    expect(span.attributes["messaging.destination.subscription.name"]).toBe(
      "projects/test-project/subscriptions/test-sub",
    );
    // Without the header, the attribute the Pub/Sub client wrote is the parent.
    otel.reset();
    await handler(pushRequest({}, { attributes: { googclient_traceparent: other } }), res());
    expect(
      otel
        .spans()
        .find((s) => s.name.startsWith("process"))
        ?.spanContext().traceId,
    ).toBe("1".repeat(32));
  });

  it("CloudEvent: the traceparent extension is the parent", async () => {
    const fn = idempotent(
      {
        backend: new InMemoryLock(),
        logger: silentLogger,
        telemetry: { tracerProvider: otel.tracerProvider },
      },
      () => undefined,
    );
    const event = { ...structuredCloudEvent({}), traceparent: TRACEPARENT } as CloudEventLike;
    await fn(event);
    // The event's data names its subscription: the span is named by it, as a push's is.
    const subscription = "projects/test-project/subscriptions/test-sub";
    const span = otel.span(`process ${subscription}`);
    expect(span.spanContext().traceId).toBe(TRACE_ID);
    expect(parentOf(span)).toBe(PARENT_ID);
    expect(span.attributes["idempotency.surface"]).toBe("idempotent");
    expect(span.attributes["messaging.destination.subscription.name"]).toBe(subscription);
  });

  it("hostile traceparents never throw and never become the parent", async () => {
    const handler = idempotentHttp(
      {
        backend: new InMemoryLock(),
        logger: silentLogger,
        telemetry: { tracerProvider: otel.tracerProvider },
      },
      () => undefined,
    );
    const listener = idempotentMessage(
      {
        backend: new InMemoryLock(),
        logger: silentLogger,
        telemetry: { tracerProvider: otel.tracerProvider },
      },
      () => undefined,
    );
    const invalid = fc.oneof(
      fc.string(),
      fc.string({ unit: "binary" }),
      fc.constantFrom(
        `00-${"0".repeat(32)}-${PARENT_ID}-01`,
        `00-${TRACE_ID}-${"0".repeat(16)}-01`,
        `ff-${TRACE_ID}-${PARENT_ID}-01`,
        `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`,
        `00-${TRACE_ID}-${PARENT_ID}-01-extra`,
        ` ${TRACEPARENT}`,
        `${TRACEPARENT}\n`,
        `00-${TRACE_ID}-${PARENT_ID}-1`,
        `${TRACEPARENT}${"-x".repeat(300)}`,
      ),
      fc
        .tuple(
          fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 2, maxLength: 2 }),
          fc.string({ maxLength: 60 }),
        )
        .map(([v, rest]) => `${v}-${rest}`),
    );
    await fc.assert(
      fc.asyncProperty(invalid, async (value) => {
        otel.reset();
        const response = res();
        await handler(
          {
            ...pushRequest({}),
            headers: { "content-type": "application/json", traceparent: value },
          },
          response,
        );
        await listener(fakeMessage("x", { attributes: { googclient_traceparent: value } }));
        const spans = otel.spans().filter((s) => s.name.startsWith("process"));
        expect(spans.length).toBe(2);
        for (const span of spans) {
          expect(span.spanContext().traceId).not.toBe(TRACE_ID);
          expect(parentOf(span)).toBeUndefined();
        }
        expect(response.statusCode).toBe(204);
      }),
      { numRuns: 150 },
    );
  });

  it("a getter on the message attributes is not run for the trace; the header array is ignored", async () => {
    let ran = 0;
    const attributes = {};
    Object.defineProperty(attributes, "googclient_traceparent", {
      get: () => {
        ran++;
        return TRACEPARENT;
      },
    });
    const listener = idempotentMessage(
      {
        backend: new InMemoryLock(),
        logger: silentLogger,
        telemetry: { tracerProvider: otel.tracerProvider },
      },
      () => undefined,
    );
    const message = { ...fakeMessage("x"), attributes };
    await listener(message);
    expect(ran).toBe(0);
    expect(otel.span(DELIVERY).spanContext().traceId).not.toBe(TRACE_ID);
    expect(message.settlements).toEqual(["ack"]);
  });
});

describe("log lines joined to the trace", () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env.GOOGLE_CLOUD_PROJECT = saved.GOOGLE_CLOUD_PROJECT;
    process.env.GCLOUD_PROJECT = saved.GCLOUD_PROJECT;
    if (saved.GOOGLE_CLOUD_PROJECT === undefined) delete process.env.GOOGLE_CLOUD_PROJECT;
    if (saved.GCLOUD_PROJECT === undefined) delete process.env.GCLOUD_PROJECT;
  });

  async function duplicateLine(telemetry: object, logger: Logger) {
    const otel = telemetryHarness();
    const listener = idempotentMessage(
      {
        backend: new InMemoryLock(),
        logger,
        telemetry: { tracerProvider: otel.tracerProvider, ...telemetry },
      },
      () => undefined,
    );
    await listener(
      fakeMessage("x", { messageId: "dup", attributes: { googclient_traceparent: TRACEPARENT } }),
    );
    otel.reset();
    await listener(
      fakeMessage("x", { messageId: "dup", attributes: { googclient_traceparent: TRACEPARENT } }),
    );
    return otel.span(DELIVERY);
  }

  it("the option's project names the trace; spanId and trace_sampled join the line", async () => {
    const logger = captureLogger();
    const span = await duplicateLine({ projectId: "orders-prod" }, logger);
    const line = logger.lines.find((l) => l.fields.outcome === "duplicate");
    expect(line?.fields).toMatchObject({
      key: "dup",
      "logging.googleapis.com/trace": `projects/orders-prod/traces/${TRACE_ID}`,
      "logging.googleapis.com/spanId": span.spanContext().spanId,
      "logging.googleapis.com/trace_sampled": true,
    });
  });

  it("without the option, GOOGLE_CLOUD_PROJECT, then GCLOUD_PROJECT; without either, no trace field", async () => {
    process.env.GOOGLE_CLOUD_PROJECT = "from-google";
    process.env.GCLOUD_PROJECT = "from-gcloud";
    let logger = captureLogger();
    await duplicateLine({}, logger);
    expect(logger.lines[0]?.fields["logging.googleapis.com/trace"]).toBe(
      `projects/from-google/traces/${TRACE_ID}`,
    );
    delete process.env.GOOGLE_CLOUD_PROJECT;
    logger = captureLogger();
    await duplicateLine({}, logger);
    expect(logger.lines[0]?.fields["logging.googleapis.com/trace"]).toBe(
      `projects/from-gcloud/traces/${TRACE_ID}`,
    );
    delete process.env.GCLOUD_PROJECT;
    logger = captureLogger();
    await duplicateLine({}, logger);
    expect(logger.lines[0]?.fields).not.toHaveProperty("logging.googleapis.com/trace");
    expect(logger.lines[0]?.fields).toHaveProperty("logging.googleapis.com/spanId");
  });

  it("the default JSON logger writes the fields; a throwing logger stays contained", async () => {
    const writes: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string) => {
      writes.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    try {
      await duplicateLine({ projectId: "p1" }, undefined as unknown as Logger);
    } finally {
      process.stdout.write = write;
    }
    const entry = JSON.parse(writes.find((w) => w.includes('"duplicate"')) ?? "{}");
    expect(entry).toMatchObject({
      severity: "INFO",
      "logging.googleapis.com/trace": `projects/p1/traces/${TRACE_ID}`,
      "logging.googleapis.com/trace_sampled": true,
    });

    const throwing: Logger = {
      info: () => {
        throw new Error("logger down");
      },
      warn: () => {
        throw new Error("logger down");
      },
      error: () => {
        throw new Error("logger down");
      },
    };
    const span = await duplicateLine({}, throwing);
    expect(span.attributes["idempotency.outcome"]).toBe("duplicate");
  });

  it("no fields when telemetry is off", async () => {
    const logger = captureLogger();
    const listener = idempotentMessage(
      { backend: new InMemoryLock(), logger, telemetry: false },
      () => undefined,
    );
    await listener(fakeMessage("x", { messageId: "d2" }));
    await listener(fakeMessage("x", { messageId: "d2" }));
    expect(Object.keys(logger.lines[0]?.fields ?? {}).some((k) => k.startsWith("logging."))).toBe(
      false,
    );
  });
});
