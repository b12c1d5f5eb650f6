import { cloudEvent } from "@google-cloud/functions-framework";
import { getTestServer } from "@google-cloud/functions-framework/testing";
import { afterEach, describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { InProgress, UnkeyedMessage } from "../../src/core/errors.js";
import { parseCloudEvent } from "../../src/surfaces/formats/pubsub-cloud-event.js";
import { idempotent } from "../../src/surfaces/index.js";
import { binaryCloudEvent, pushBody, structuredCloudEvent } from "../../src/testing/index.js";
import { captureLogger, gate, listen, post } from "./helpers.js";

let seq = 0;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

/** Register a cloudEvent function under a fresh name and start the framework's server for it. */
async function serveCloudEvent(fn: Parameters<typeof cloudEvent>[1]): Promise<string> {
  const name = `ce${++seq}`;
  cloudEvent(name, fn);
  const server = await listen(getTestServer(name));
  closers.push(server.close);
  return server.url;
}

describe("idempotent() on functions-framework cloudEvent", () => {
  it("runs once for a structured CloudEvent, a binary CloudEvent and a raw push body", async () => {
    const backend = new InMemoryLock();
    const logger = captureLogger();
    const seen: { id: string; text: string }[] = [];
    const url = await serveCloudEvent(
      idempotent({ backend, logger }, (event) => {
        const m = parseCloudEvent(event);
        seen.push({ id: m.messageId, text: m.text() });
      }),
    );

    const structured = structuredCloudEvent({ n: 1 }, { messageId: "s-1" });
    expect(
      (await post(url, structured, { "content-type": "application/cloudevents+json" })).status,
    ).toBe(204);

    const binary = binaryCloudEvent("binary", { messageId: "b-1" });
    expect((await post(url, binary.body, binary.headers)).status).toBe(204);

    // functions-framework turns a raw push body into a messagePublished CloudEvent itself.
    const raw = pushBody("raw", { messageId: "r-1" });
    expect((await post(`${url}projects/p/topics/t`, raw)).status).toBe(204);

    expect(seen).toEqual([
      { id: "s-1", text: '{"n":1}' },
      { id: "b-1", text: "binary" },
      { id: "r-1", text: "raw" },
    ]);

    // Every redelivery of the three is a duplicate: 204 without running the body.
    expect(
      (await post(url, structured, { "content-type": "application/cloudevents+json" })).status,
    ).toBe(204);
    expect((await post(url, binary.body, binary.headers)).status).toBe(204);
    expect((await post(`${url}projects/p/topics/t`, raw)).status).toBe(204);
    expect(seen).toHaveLength(3);
    expect(logger.at("WARNING")).toEqual([]);
  });

  it("a throwing body gives 500 and the redelivery runs again", async () => {
    const backend = new InMemoryLock();
    let calls = 0;
    const url = await serveCloudEvent(
      idempotent({ backend, logger: captureLogger() }, () => {
        calls += 1;
        if (calls === 1) throw new Error("boom");
      }),
    );
    const event = structuredCloudEvent("x", { messageId: "t-1" });
    const headers = { "content-type": "application/cloudevents+json" };
    expect((await post(url, event, headers)).status).toBe(500);
    expect((await post(url, event, headers)).status).toBe(204);
    expect((await post(url, event, headers)).status).toBe(204);
    expect(calls).toBe(2);
  });

  it("contention gives 500 and exactly one warning line with the key and lease end", async () => {
    const backend = new InMemoryLock();
    const logger = captureLogger();
    const hold = gate();
    const started = gate();
    let calls = 0;
    const url = await serveCloudEvent(
      idempotent({ backend, logger }, async () => {
        calls += 1;
        started.open();
        await hold.promise;
      }),
    );
    const event = structuredCloudEvent("x", { messageId: "c-1" });
    event.data = { ...event.data, deliveryAttempt: 2 };
    const headers = { "content-type": "application/cloudevents+json" };
    const first = post(url, event, headers);
    await started.promise;
    expect((await post(url, event, headers)).status).toBe(500);
    hold.open();
    expect((await first).status).toBe(204);
    expect(calls).toBe(1);
    const warnings = logger.at("WARNING");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields).toMatchObject({
      key: "c-1",
      deliveryAttempt: 2,
      outcome: "held",
    });
    expect(typeof warnings[0]?.fields.leaseExpiresAt).toBe("string");
    expect(JSON.stringify(warnings[0])).not.toContain("at ");
  });

  it("rejects InProgress, UnkeyedMessage and the body's error when called directly", async () => {
    const backend = new InMemoryLock();
    const logger = captureLogger();
    await backend.claim("held", 60_000);
    const fn = idempotent({ backend, logger }, () => {});
    const contended = await fn(structuredCloudEvent("x", { messageId: "held" })).catch(
      (e: unknown) => e,
    );
    expect(contended).toBeInstanceOf(InProgress);
    // functions-framework prints err.stack: it must be one line for routine contention.
    expect((contended as Error).stack).not.toContain("\n");
    await expect(
      fn({ type: "google.cloud.pubsub.topic.v1.messagePublished", data: {} }),
    ).rejects.toBeInstanceOf(UnkeyedMessage);
    const boom = new Error("boom");
    const throwing = idempotent({ backend, logger }, () => {
      throw boom;
    });
    await expect(throwing(structuredCloudEvent("x"))).rejects.toBe(boom);
  });

  it("allowUnguarded runs an unkeyed event with a warning", async () => {
    const logger = captureLogger();
    let ran = 0;
    const fn = idempotent({ backend: new InMemoryLock(), logger, allowUnguarded: true }, () => {
      ran += 1;
    });
    await fn({ data: { message: {} } });
    await fn({ data: { message: {} } });
    expect(ran).toBe(2);
    expect(logger.at("WARNING").map((l) => l.fields.outcome)).toEqual(["unguarded", "unguarded"]);
  });
});
