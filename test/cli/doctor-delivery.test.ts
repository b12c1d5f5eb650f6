// doctor's rules about the service's deadLetter and a pull worker's flow control: arithmetic,
// property tests, and the command against subscriptions on the Pub/Sub emulator.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flowControlRule } from "../../src/cli/doctor-flow-control.js";
import {
  checkRules,
  type RuleResult,
  type Sizing,
  type SubscriptionFacts,
  subscriptionFacts,
} from "../../src/cli/doctor-rules.js";
import { type BuiltCli, buildCli } from "../support/cli.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";

const push: SubscriptionFacts = {
  name: "projects/p/subscriptions/orders",
  topic: "projects/p/topics/orders",
  ackDeadlineSeconds: 60,
  retryPolicy: { minimumBackoffMs: 10_000, maximumBackoffMs: 600_000 },
  deadLetter: { topic: "projects/p/topics/dead", maxDeliveryAttempts: 5 },
  pushEndpoint: "https://orders.run.app/push",
  pushAuth: { serviceAccountEmail: "push@p.iam.gserviceaccount.com", audience: undefined },
  exactlyOnce: false,
  unwrapped: false,
};
const pull: SubscriptionFacts = { ...push, pushEndpoint: undefined, pushAuth: undefined };
const sizing: Sizing = {
  leaseMs: 900_000,
  ttlMs: 3_600_000,
  heartbeat: false,
  maxRunMs: undefined,
  holderLifeMs: 3_600_000,
  maxHoldMs: 3_600_000,
  maxDeliveryAttempts: undefined,
  maxMessages: 1_000,
  maxExtensionMs: 3_600_000,
  store: undefined,
  rate: undefined,
  mutexRate: undefined,
  recordIds: "spread",
  expiryUnindexed: false,
};
const rule = (facts: SubscriptionFacts, s: Partial<Sizing>, name: RuleResult["rule"]) =>
  checkRules(facts, { ...sizing, ...s }).find((r) => r.rule === name) as RuleResult;

describe("deadLetter against the dead-letter policy", () => {
  it("rule 3 with deadLetter: the last two attempts wait, so 5 attempts are enough", () => {
    // Without deadLetter, 5 attempts are too few for a 15-minute lease (7 contention nacks).
    expect(rule(push, {}, "dead-letter").verdict).toBe("fail");
    const aware = rule(push, { maxDeliveryAttempts: 5 }, "dead-letter");
    expect(aware).toMatchObject({
      verdict: "pass",
      arithmetic:
        "deadLetter: attempts 4 and 5 of 5 wait for the holder up to 60 s (the ack deadline, as long as Pub/Sub listens to a push); longest run 60 s (the ack deadline standing in; set --max-run) ≤ 60 s",
    });
    expect(rule(push, { maxDeliveryAttempts: 5 }, "dead-letter-option")).toMatchObject({
      verdict: "pass",
      arithmetic: expect.stringContaining("attempts 4 and 5 wait for a holder"),
    });
  });

  it("rule 3 with deadLetter fails when the holder can outlast the wait", () => {
    const slow = rule(push, { maxDeliveryAttempts: 5, maxRunMs: 120_000 }, "dead-letter");
    expect(slow.verdict).toBe("fail");
    expect(slow.fix).toMatch(/raise the ack deadline above 120 s/);
    // A pulled message is held while the client keeps its lease: 60 minutes by default.
    expect(rule(pull, { maxDeliveryAttempts: 5, maxRunMs: 120_000 }, "dead-letter").verdict).toBe(
      "pass",
    );
    const lapsing = rule(
      pull,
      { maxDeliveryAttempts: 5, maxRunMs: 120_000, maxExtensionMs: 60_000 },
      "dead-letter",
    );
    expect(lapsing.fix).toMatch(/maxExtensionTime/);
  });

  it.each<[string, SubscriptionFacts, number | undefined, string, RegExp]>([
    [
      "not set, with a policy",
      push,
      undefined,
      "n/a",
      /with deadLetter: \{ maxDeliveryAttempts: 5 \}/,
    ],
    ["set, without a policy", { ...push, deadLetter: undefined }, 10, "fail", /cannot act/],
    ["above the policy", push, 10, "fail", /never sends: contention still dead-letters/],
    [
      "below the policy",
      { ...push, deadLetter: { topic: "t", maxDeliveryAttempts: 20 } },
      10,
      "fail",
      /onExhausted runs on every nack from attempt 10/,
    ],
    ["an unwrapped push", { ...push, unwrapped: true }, 5, "fail", /no deliveryAttempt/],
  ])("%s", (_, facts, service, verdict, text) => {
    const result = rule(facts, { maxDeliveryAttempts: service }, "dead-letter-option");
    expect(result.verdict).toBe(verdict);
    expect(result.arithmetic).toMatch(text);
    // Rule 3 keeps its contention arithmetic while deadLetter cannot act.
    expect(rule(facts, { maxDeliveryAttempts: service }, "dead-letter").arithmetic).not.toMatch(
      /^deadLetter:/,
    );
  });

  it("passes exactly when the service's number is the policy's, on a push with an envelope", () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 5, max: 100 }), { nil: undefined }),
        fc.option(fc.integer({ min: 5, max: 100 }), { nil: undefined }),
        fc.boolean(),
        (service, policy, unwrapped) => {
          const facts = {
            ...push,
            unwrapped,
            deadLetter:
              policy === undefined ? undefined : { topic: "t", maxDeliveryAttempts: policy },
          };
          const { verdict } = rule(facts, { maxDeliveryAttempts: service }, "dead-letter-option");
          if (service === undefined) expect(verdict).toBe("n/a");
          else expect(verdict === "pass").toBe(service === policy && !unwrapped);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("reads an unwrapped push from pushConfig.noWrapper", () => {
    const facts = subscriptionFacts({
      name: "projects/p/subscriptions/s",
      pushConfig: { pushEndpoint: "https://x.test/", noWrapper: { writeMetadata: true } },
    });
    expect(facts.unwrapped).toBe(true);
    expect(subscriptionFacts({ name: "projects/p/subscriptions/s" }).unwrapped).toBe(false);
  });
});

describe("flow control of a pull worker", () => {
  it("maxMessages not given: the rule is not judged, and says to give it", () => {
    expect(rule(pull, { maxMessages: undefined, maxRunMs: 30_000 }, "flow-control")).toMatchObject({
      verdict: "n/a",
      arithmetic: expect.stringMatching(/^not checked: give .+ --max-messages/),
    });
  });

  it("maxMessages × the longest run must fit the lease and the message's lease", () => {
    expect(rule(pull, { maxMessages: 20, maxRunMs: 30_000 }, "flow-control")).toMatchObject({
      verdict: "pass",
      arithmetic:
        "maxMessages 20 (--max-messages) × longest run 30 s (--max-run) = 600 s ≤ 900 s, the shorter of the lease 900 s and the message's lease 3600 s (maxExtensionTime, --max-extension)",
    });
    // The client's default of 1,000 messages: 1,000 × 10 s (the ack deadline standing in).
    expect(rule({ ...pull, ackDeadlineSeconds: 10 }, {}, "flow-control")).toMatchObject({
      verdict: "fail",
      fix: "subscribe with flowControl: { maxMessages: 90 }, or turn on heartbeat",
    });
    // With heartbeat the claim lasts maxHoldMs; the message's lease still bounds it.
    expect(
      rule(pull, { heartbeat: true, maxMessages: 100, maxRunMs: 30_000 }, "flow-control").verdict,
    ).toBe("pass");
    expect(
      rule(
        pull,
        { heartbeat: true, maxMessages: 100, maxRunMs: 30_000, maxExtensionMs: 600_000 },
        "flow-control",
      ).fix,
    ).toBe("subscribe with flowControl: { maxMessages: 20 }");
    expect(rule(push, {}, "flow-control").verdict).toBe("n/a");
  });

  it("the verdict is the arithmetic, and the maxMessages a fix names passes", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5_000 }),
        fc.integer({ min: 1, max: 3_600_000 }),
        fc.integer({ min: 1, max: 7_200_000 }),
        fc.integer({ min: 1, max: 7_200_000 }),
        fc.boolean(),
        (maxMessages, maxRunMs, claimMs, maxExtensionMs, heartbeat) => {
          const s = {
            ...sizing,
            heartbeat,
            maxMessages,
            maxRunMs,
            maxExtensionMs,
            leaseMs: claimMs,
            maxHoldMs: claimMs,
          };
          const result = flowControlRule(pull, s);
          const fits = maxMessages * maxRunMs <= Math.min(claimMs, maxExtensionMs);
          expect(result.verdict).toBe(fits ? "pass" : "fail");
          const suggested = /maxMessages: (\d+) \}/.exec(result.fix ?? "")?.[1];
          if (suggested !== undefined) {
            expect(flowControlRule(pull, { ...s, maxMessages: Number(suggested) }).verdict).toBe(
              "pass",
            );
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

const emulator = await emulatorOrSkip("pubsub");
afterAll(async () => {
  await emulator?.stop();
});

describe.skipIf(!emulator)(
  "doctor --max-delivery-attempts and --max-messages on the emulator",
  () => {
    let cli: BuiltCli;
    const run = `dd${Date.now().toString(36)}`;
    const api = (path: string, body: unknown) =>
      fetch(`http://${emulator?.host}/v1/projects/${PROJECT}/${path}`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then(async (response) => {
        if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      });
    const name = (short: string) => `projects/${PROJECT}/subscriptions/${run}-${short}`;
    const doctor = (...args: string[]) => cli.run(["doctor", ...args]);

    beforeAll(async () => {
      cli = await buildCli();
      await api(`topics/${run}-orders`, {});
      await api(`topics/${run}-dead`, {});
      await api(`subscriptions/${run}-pull`, {
        topic: `projects/${PROJECT}/topics/${run}-orders`,
        ackDeadlineSeconds: 30,
        retryPolicy: { minimumBackoff: "10s", maximumBackoff: "600s" },
        deadLetterPolicy: {
          deadLetterTopic: `projects/${PROJECT}/topics/${run}-dead`,
          maxDeliveryAttempts: 5,
        },
      });
    });
    afterAll(() => cli?.remove());

    it("5 attempts break rule 3 without deadLetter and hold with it; flow control is judged", async () => {
      const plain = await doctor("--subscription", name("pull"), "--max-messages", "20");
      expect(plain.code).toBe(1);
      expect(plain.stdout).toMatch(/^✗ rule 3: /m);
      expect(plain.stdout).toMatch(
        /^– deadLetter: .+\n {4}no --max-delivery-attempts: with deadLetter: \{ maxDeliveryAttempts: 5 \}/m,
      );
      const aware = await doctor(
        "--subscription",
        name("pull"),
        "--max-delivery-attempts",
        "5",
        "--max-messages",
        "20",
      );
      expect({ code: aware.code, stderr: aware.stderr }).toEqual({ code: 0, stderr: "" });
      expect(aware.stdout).toContain("deadLetter          maxDeliveryAttempts 5\n");
      expect(aware.stdout).toContain(
        "subscriber          flowControl.maxMessages 20, maxExtensionTime 1h\n",
      );
      expect(aware.stdout).toMatch(/^✓ rule 3: .+\n {4}deadLetter: attempts 4 and 5 of 5 wait/m);
      expect(aware.stdout).toMatch(
        /^✓ flow control: .+\n {4}maxMessages 20 \(--max-messages\) × longest run 30 s/m,
      );
      const crowded = await doctor(
        "--subscription",
        name("pull"),
        "--max-delivery-attempts",
        "5",
        "--max-messages",
        "1000",
      );
      expect(crowded.code).toBe(1);
      expect(crowded.stdout).toContain("fix: subscribe with flowControl: { maxMessages: 30 }");
      // Not given, maxMessages is not judged: the rule says what to give.
      const unset = await doctor("--subscription", name("pull"), "--max-delivery-attempts", "5");
      expect(unset.code).toBe(0);
      expect(unset.stdout).toMatch(/^– flow control: .+\n {4}not checked: give .+--max-messages/m);
      const mismatch = await doctor(
        "--subscription",
        name("pull"),
        "--max-delivery-attempts",
        "10",
      );
      expect(mismatch.stdout).toMatch(
        /^✗ deadLetter: .+\n {4}deadLetter.maxDeliveryAttempts 10 ≠ the policy's 5/m,
      );
    });

    it("refuses a --max-delivery-attempts Pub/Sub would not allow (exit 2)", async () => {
      const result = await doctor("--subscription", name("pull"), "--max-delivery-attempts", "4");
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        '--max-delivery-attempts must be a whole number from 5 to 100, got "4"',
      );
    });
  },
);
