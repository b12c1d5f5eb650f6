// The surfaces' fingerprint option: a second payload under a key is never acked.
import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import {
  InMemoryLock,
  InvalidConfiguration,
  idempotent,
  idempotentHttp,
  idempotentMessage,
  type LockBackend,
  PayloadMismatch,
} from "../../src/index.js";
import { payloadFingerprint } from "../../src/surfaces/fingerprint.js";
import { fakeMessage, pushBody, structuredCloudEvent } from "../../src/testing/index.js";
import { captureLogger } from "../support/logger.js";

function response() {
  return {
    statusCode: 0,
    text: "",
    headersSent: false,
    writableEnded: false,
    setHeader() {},
    end(text?: string) {
      this.text = text ?? "";
      this.writableEnded = true;
    },
  };
}

describe("fingerprint: true", () => {
  it("hashes data, attributes and ordering key; never messageId, publishTime or deliveryAttempt", () => {
    const base = { data: Buffer.from("order 1"), attributes: { a: "1", b: "2" }, orderingKey: "o" };
    const fp = payloadFingerprint(base);
    expect(fp).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(payloadFingerprint({ ...base, attributes: { b: "2", a: "1" } })).toBe(fp);
    expect(payloadFingerprint({ ...base, data: Buffer.from("order 2") })).not.toBe(fp);
    expect(payloadFingerprint({ ...base, attributes: { a: "1", b: "3" } })).not.toBe(fp);
    expect(payloadFingerprint({ ...base, orderingKey: undefined })).not.toBe(fp);
    // No field boundary can be moved to give the same text.
    expect(payloadFingerprint({ data: Buffer.from("b"), attributes: { a: "" } })).not.toBe(
      payloadFingerprint({ data: Buffer.from(""), attributes: { a: "b" } }),
    );
  });

  it("pull: the same message redelivered is a duplicate (acked); another payload under its key is nacked with one ERROR", async () => {
    const backend = new InMemoryLock();
    const logger = captureLogger();
    const runs: string[] = [];
    const listener = idempotentMessage(
      { backend, logger, fingerprint: true, key: (m) => m.attributes?.orderId },
      async (m) => {
        runs.push(String(m.data));
      },
    );
    const first = fakeMessage("total=99", { attributes: { orderId: "7" }, deliveryAttempt: 1 });
    const retry = fakeMessage("total=99", { attributes: { orderId: "7" }, deliveryAttempt: 2 });
    const other = fakeMessage("total=12", { attributes: { orderId: "7" } });
    for (const m of [first, retry, other]) await listener(m);
    expect([first.settlements, retry.settlements, other.settlements]).toEqual([
      ["ack"],
      ["ack"],
      ["nack"],
    ]);
    expect(runs).toEqual(["total=99"]);
    const errors = logger.at("ERROR");
    expect(errors).toHaveLength(1);
    expect(errors[0]?.fields).toMatchObject({ key: "7", outcome: "payload_mismatch" });
  });

  it("HTTP push answers 409 with a one-line reason; the CloudEvent function rejects PayloadMismatch", async () => {
    const backend = new InMemoryLock();
    const key = () => "order-7";
    const http = idempotentHttp(
      { backend, fingerprint: true, key, logger: captureLogger() },
      async () => {},
    );
    const ok = response();
    await http({ body: pushBody("a") }, ok);
    const mismatch = response();
    await http({ body: pushBody("b") }, mismatch);
    expect([ok.statusCode, mismatch.statusCode]).toEqual([204, 409]);
    expect(mismatch.text).toContain('key "order-7" was first used with another payload');
    expect(mismatch.text.trim().split("\n")).toHaveLength(1);

    const event = idempotent(
      { backend: new InMemoryLock(), fingerprint: true, key, logger: captureLogger() },
      async () => {},
    );
    await event(structuredCloudEvent("a"));
    await expect(event(structuredCloudEvent("b"))).rejects.toBeInstanceOf(PayloadMismatch);
  });

  it("a fingerprint function names the payload; one that throws or returns a bad value nacks", async () => {
    const backend = new InMemoryLock();
    const logger = captureLogger();
    const listener = idempotentMessage(
      {
        backend,
        logger,
        key: () => "k",
        fingerprint: (m) => {
          const text = String(m.data);
          if (text === "throw") throw new Error("cannot read the payload");
          return text === "bad" ? "" : text.split(";")[0];
        },
      },
      async () => {},
    );
    const messages = ["po=1;at=1", "po=1;at=2", "po=2;at=3", "throw", "bad"].map((t) =>
      fakeMessage(t),
    );
    for (const m of messages) await listener(m);
    expect(messages.map((m) => m.settlements[0])).toEqual(["ack", "ack", "nack", "nack", "nack"]);
  });

  it("is refused when built, on a bad value or a backend that stores no fingerprints", () => {
    const inner = new InMemoryLock();
    const plain: LockBackend = {
      claim: (k, l) => inner.claim(k, l),
      complete: (c) => inner.complete(c),
      release: (c) => inner.release(c),
    };
    expect(() => idempotentMessage({ backend: plain, fingerprint: true }, async () => {})).toThrow(
      /stores fingerprints/,
    );
    expect(() =>
      idempotentMessage({ backend: inner, fingerprint: "yes" as unknown as true }, async () => {}),
    ).toThrow(InvalidConfiguration);
  });
});
