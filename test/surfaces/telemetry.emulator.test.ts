// One push through the real Pub/Sub emulator: the publisher's client, with its OpenTelemetry
// support on, writes the trace context into the message (googclient_traceparent); the push
// reaches idempotentHttp on a local server, and the delivery span lands under that trace.
import { createServer as createHttpServer } from "node:http";
import { PubSub } from "@google-cloud/pubsub";
import { trace } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { idempotentHttp } from "../../src/surfaces/index.js";
import { type Emulator, PROJECT } from "../support/gcloud-emulator.js";
import { captureLogger } from "../support/logger.js";
import { emulatorOrSkip } from "../support/required.js";
import { parentOf, telemetryHarness, useContextManager } from "../support/telemetry.js";
import { listen } from "./helpers.js";

const emulator: Emulator | undefined = await emulatorOrSkip("pubsub");

describe.skipIf(emulator === undefined)("a traced push through the Pub/Sub emulator", () => {
  const otel = telemetryHarness();
  let pubsub: PubSub;
  const run = `otel${Date.now().toString(36)}`;

  beforeAll(() => {
    useContextManager();
    // The Pub/Sub client traces through the global provider.
    trace.setGlobalTracerProvider(otel.tracerProvider);
    pubsub = new PubSub({
      projectId: PROJECT,
      apiEndpoint: emulator?.host ?? "",
      emulatorMode: true,
      enableOpenTelemetryTracing: true,
    });
  });

  afterAll(async () => {
    trace.disable();
    await pubsub?.close();
    await emulator?.stop();
  });

  it("the delivery span continues the trace the published message carries", async () => {
    const logger = captureLogger();
    const seen: { id: string; traceparent: string | undefined }[] = [];
    const fn = idempotentHttp(
      { backend: new InMemoryLock(), logger, telemetry: { projectId: "emulated" } },
      (m) => {
        seen.push({ id: m.messageId, traceparent: m.attributes.googclient_traceparent });
      },
    );
    const server = await listen(createHttpServer((req, res) => void fn(req, res)));
    try {
      const [topic] = await pubsub.createTopic(`traced-${run}`);
      await topic.createSubscription(`traced-${run}-sub`, {
        pushConfig: { pushEndpoint: server.url },
      });
      const tracer = otel.tracerProvider.getTracer("publisher-app");
      let traceId = "";
      const id = await tracer.startActiveSpan("publish order", async (span) => {
        traceId = span.spanContext().traceId;
        try {
          return await topic.publishMessage({ json: { order: 7 } });
        } finally {
          span.end();
        }
      });
      const deadline = Date.now() + 20_000;
      while (seen.length === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(seen.map((s) => s.id)).toEqual([id]);
      // The client wrote its context into the message, under the publisher's trace.
      expect(seen[0]?.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      const delivery = otel
        .spans()
        .find((s) => s.name === `process projects/${PROJECT}/subscriptions/traced-${run}-sub`);
      expect(delivery?.spanContext().traceId).toBe(traceId);
      expect(parentOf(delivery as never)).toBe(seen[0]?.traceparent?.slice(36, 52));
      expect(delivery?.attributes).toMatchObject({
        "messaging.system": "gcp_pubsub",
        "messaging.message.id": id,
        "idempotency.outcome": "ran",
      });
      const verb = otel.spans().find((s) => s.name === "gcp-pubsub-idempotency lock");
      expect(verb?.spanContext().traceId).toBe(traceId);
    } finally {
      await server.close();
    }
  });
});
