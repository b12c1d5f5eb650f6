// createTestIdentity with an endpoint that checks push auth: idempotentHttp({ auth }) given the
// identity's `auth` (its certificates in place of Google's) runs the body for a token the
// identity signs, and answers 401/403 to the forged ones, before the body, as in production.
import { describe, expect, it } from "vitest";
import { InMemoryLock } from "../../src/backends/memory/index.js";
import { idempotentHttp } from "../../src/surfaces/index.js";
import {
  createTestIdentity,
  FORGED_PUSH_AUTH_STATUS,
  simulatePushDeliveries,
} from "../../src/testing/index.js";
import { captureLogger } from "../surfaces/helpers.js";

describe("createTestIdentity signs the tokens of an authenticated push", () => {
  const identity = createTestIdentity({ audience: "https://orders.example.com/pubsub/push" });
  let runs = 0;
  const handler = idempotentHttp(
    { backend: new InMemoryLock(), auth: identity.auth, logger: captureLogger() },
    async () => {
      runs += 1;
    },
  );

  it("a token it signs for the endpoint's audience: the body runs once, every copy acked", async () => {
    const before = runs;
    const report = await simulatePushDeliveries({
      handler,
      messages: [{ orderId: "4711" }],
      authorization: () => identity.authorization(),
    });
    expect(report.unacked).toEqual([]);
    // Two copies go at once: when they overlap, the second finds the first's claim held and
    // is answered 503, and its redelivery acked. Every copy ends in a 204; nothing else.
    const { 204: acked, 503: _held, ...other } = report.statusCounts;
    expect(acked).toBe(3);
    expect(other).toEqual({});
    expect(runs - before).toBe(1);
    expect(identity.auth).toMatchObject({
      audience: "https://orders.example.com/pubsub/push",
      serviceAccountEmail: identity.email,
    });
  });

  it.each(["missing", "wrong-audience", "expired", "other-service-account"] as const)(
    "%s: refused with its status, and the body never runs",
    async (kind) => {
      const before = runs;
      const report = await simulatePushDeliveries({
        handler,
        messages: [{ orderId: kind }],
        copies: 1,
        maxRedeliveries: 0,
        authorization: identity.forge(kind),
      });
      expect(report.statusCounts).toEqual({ [FORGED_PUSH_AUTH_STATUS[kind]]: 1 });
      expect(runs).toBe(before);
    },
  );

  it("a token signed for another audience than the endpoint's is refused (401)", async () => {
    const report = await simulatePushDeliveries({
      handler,
      messages: ["x"],
      copies: 1,
      maxRedeliveries: 0,
      authorization: identity.authorization({ aud: "https://other.example.com/push" }),
    });
    expect(report.statusCounts).toEqual({ 401: 1 });
  });

  it("the @example of createTestIdentity prints what it says: 1 [] and 1 { 401: 3 }", async () => {
    const identity = createTestIdentity({ audience: "https://orders.example.com/pubsub/push" });
    let runs = 0;
    const handler = idempotentHttp(
      { backend: new InMemoryLock(), auth: identity.auth, logger: captureLogger() },
      async () => {
        runs += 1;
      },
    );
    const signed = await simulatePushDeliveries({
      handler,
      messages: [{ orderId: "4711" }],
      authorization: () => identity.authorization(),
    });
    expect([runs, signed.unacked]).toEqual([1, []]);
    const forged = await simulatePushDeliveries({
      handler,
      messages: [{ orderId: "4712" }],
      authorization: identity.forge("wrong-audience"),
      maxRedeliveries: 0,
    });
    expect([runs, forged.statusCounts]).toEqual([1, { 401: 3 }]);
  });
});
