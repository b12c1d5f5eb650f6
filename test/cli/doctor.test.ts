// doctor against subscriptions on the Pub/Sub emulator (the bin reads them through the admin
// API's REST form, as it does in production), and its rules as arithmetic.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { subscriptionName } from "../../src/cli/doctor.js";
import {
  checkRules,
  contentionAttempts,
  minimumDeliveryAttempts,
  type Sizing,
  type SubscriptionFacts,
  subscriptionFacts,
} from "../../src/cli/doctor-rules.js";
import { type BuiltCli, buildCli } from "../support/cli.js";
import { PROJECT } from "../support/gcloud-emulator.js";
import { emulatorOrSkip } from "../support/required.js";

describe("the rules as arithmetic", () => {
  const retry = { minimumBackoffMs: 10_000, maximumBackoffMs: 600_000 };

  it("the README's example: a 15-minute lease and a 10 s → 600 s backoff cost 7 nacks, so at least 10 attempts", () => {
    expect(contentionAttempts(900_000, retry)).toEqual(
      [0, 10, 30, 70, 150, 310, 630].map((s) => s * 1_000),
    );
    expect(minimumDeliveryAttempts(900_000, retry)?.minimum).toBe(10);
    expect(minimumDeliveryAttempts(1_800_000, retry)?.minimum).toBe(11);
  });

  it("without a retry policy no number of attempts is enough", () => {
    expect(contentionAttempts(900_000, undefined)).toBe(undefined);
  });

  const facts: SubscriptionFacts = {
    name: "projects/p/subscriptions/orders",
    topic: "projects/p/topics/orders",
    ackDeadlineSeconds: 60,
    retryPolicy: retry,
    deadLetter: { topic: "projects/p/topics/dead", maxDeliveryAttempts: 10 },
    pushEndpoint: "https://orders.run.app/push",
    pushAuth: { serviceAccountEmail: "push@p.iam.gserviceaccount.com", audience: undefined },
    exactlyOnce: false,
    unwrapped: false,
  };
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
  const verdicts = (f: SubscriptionFacts, s: Sizing) =>
    Object.fromEntries(checkRules(f, s).map((r) => [r.rule, r.verdict]));

  it("the defaults with a dead-letter policy of 10 and push auth hold every rule", () => {
    expect(verdicts(facts, sizing)).toEqual({
      lease: "pass",
      "lease+ttl": "pass",
      "dead-letter": "pass",
      "dead-letter-option": "n/a",
      "retry-policy": "pass",
      "flow-control": "n/a",
      "push-auth": "pass",
      "key-write-rate": "n/a",
      "write-rate": "n/a",
    });
  });

  it.each<[string, Partial<SubscriptionFacts>, Partial<Sizing>, string | string[]]>([
    ["a lease shorter than the longest run", {}, { maxRunMs: 1_200_000 }, "lease"],
    [
      "a lease no longer than the ack deadline",
      { ackDeadlineSeconds: 600 },
      { leaseMs: 600_000 },
      "lease",
    ],
    ["lease + ttl within a holder's life", {}, { leaseMs: 120_000, ttlMs: 60_000 }, "lease+ttl"],
    [
      "too few dead-letter attempts",
      { deadLetter: { topic: "t", maxDeliveryAttempts: 9 } },
      {},
      "dead-letter",
    ],
    [
      "a dead-letter policy without a retry policy",
      { retryPolicy: undefined },
      {},
      ["dead-letter", "retry-policy"],
    ],
    [
      "no retry policy (and no dead-letter policy)",
      { retryPolicy: undefined, deadLetter: undefined },
      {},
      "retry-policy",
    ],
    ["an unauthenticated push", { pushAuth: undefined }, {}, "push-auth"],
  ])("%s breaks exactly that rule", (_, f, s, broken) => {
    const result = verdicts({ ...facts, ...f }, { ...sizing, ...s });
    expect(Object.entries(result).filter(([, v]) => v === "fail")).toEqual(
      [broken].flat().map((rule) => [rule, "fail"]),
    );
  });

  it("no retry policy: a pull worker spins; the fix is the gcloud line that sets the backoff", () => {
    const pull = { ...facts, retryPolicy: undefined, pushEndpoint: undefined, pushAuth: undefined };
    expect(checkRules(pull, sizing).find((r) => r.rule === "retry-policy")).toEqual({
      rule: "retry-policy",
      title: "a nack waits out a backoff (retry policy)",
      verdict: "fail",
      arithmetic:
        "no retry policy: a nack is redelivered at once, so a pull worker spins on contention: each copy that meets a held key is nacked and comes straight back until the holder's lease ends",
      fix: "gcloud pubsub subscriptions update orders --min-retry-delay=10s --max-retry-delay=600s",
    });
    const push = checkRules({ ...facts, retryPolicy: undefined }, sizing);
    expect(push.find((r) => r.rule === "retry-policy")?.arithmetic).toMatch(
      /a push that meets a held key is answered 503 and pushed again at once/,
    );
  });

  it("a short subscription name takes its project from --project, and only from there", () => {
    expect(subscriptionName("orders", "my-project")).toBe(
      "projects/my-project/subscriptions/orders",
    );
    expect(subscriptionName("projects/p/subscriptions/orders", undefined)).toBe(
      "projects/p/subscriptions/orders",
    );
    expect(subscriptionName("projects/p/subscriptions/orders", "p")).toBe(
      "projects/p/subscriptions/orders",
    );
    expect(() => subscriptionName("orders", undefined)).toThrow(
      /pass --project P .+, or the full name --subscription projects\/P\/subscriptions\/orders/,
    );
  });

  it("heartbeat holds rule 2 too: every renew moves the expiry, however short the ttl", () => {
    const rules = checkRules(facts, {
      ...sizing,
      heartbeat: true,
      leaseMs: 120_000,
      ttlMs: 60_000,
    });
    expect(rules.find((r) => r.rule === "lease+ttl")).toMatchObject({
      verdict: "pass",
      arithmetic: expect.stringContaining("heartbeat on"),
    });
    // Without it, the fix names what is at stake: a lock's repeated work, not the fence.
    const without = checkRules(facts, { ...sizing, leaseMs: 120_000, ttlMs: 60_000 });
    expect(without.find((r) => r.rule === "lease+ttl")?.fix).toMatch(/fence holds either way/);
  });

  it("heartbeat holds rule 1 whatever the run; pull and no dead-letter policy are n/a", () => {
    const result = verdicts(
      { ...facts, pushEndpoint: undefined, pushAuth: undefined, deadLetter: undefined },
      { ...sizing, heartbeat: true, maxRunMs: 7_200_000, maxMessages: 1 },
    );
    expect(result).toEqual({
      lease: "pass",
      "lease+ttl": "pass",
      "dead-letter": "n/a",
      "dead-letter-option": "n/a",
      "retry-policy": "pass",
      // One run of 2 h outlasts heartbeat's maxHoldMs (60 min): the renewals stop before it ends.
      "flow-control": "fail",
      "push-auth": "n/a",
      "key-write-rate": "n/a",
      "write-rate": "n/a",
    });
  });

  it("exactly-once pull: the ack deadline standing in for the run is at least 60 s, the client library's minimum", () => {
    const pull = {
      ...facts,
      pushEndpoint: undefined,
      pushAuth: undefined,
      ackDeadlineSeconds: 10,
      exactlyOnce: true,
    };
    const short = { ...sizing, leaseMs: 30_000 };
    expect(checkRules(pull, short).find((r) => r.rule === "lease")).toEqual({
      rule: "lease",
      title: "the lease outlasts the work",
      verdict: "fail",
      arithmetic:
        "lease 30 s ≤ longest run 60 s (the ack deadline, exactly-once's minimum, above the subscription's 10 s, standing in for the longest run; set --max-run)",
      fix: "lengthen the lease above 60 s, or turn on heartbeat",
    });
    // The same lease passes without exactly-once, and with a deadline already above 60 s.
    expect(verdicts({ ...pull, exactlyOnce: false }, short).lease).toBe("pass");
    expect(
      verdicts({ ...pull, ackDeadlineSeconds: 20 }, { ...sizing, leaseMs: 61_000 }).lease,
    ).toBe("pass");
    expect(
      verdicts({ ...pull, ackDeadlineSeconds: 120 }, { ...sizing, leaseMs: 90_000 }).lease,
    ).toBe("fail");
    // A push subscription has no exactly-once: its own deadline stands.
    expect(verdicts({ ...facts, ackDeadlineSeconds: 10, exactlyOnce: true }, short).lease).toBe(
      "pass",
    );
    expect(subscriptionFacts({ name: "n", enableExactlyOnceDelivery: true }).exactlyOnce).toBe(
      true,
    );
  });

  it("reads the REST form field by field, defaults for what the API leaves out, refusing odd shapes", () => {
    expect(
      subscriptionFacts({ name: "projects/p/subscriptions/s", retryPolicy: {} }),
    ).toMatchObject({
      ackDeadlineSeconds: 10,
      retryPolicy: { minimumBackoffMs: 10_000, maximumBackoffMs: 600_000 },
      deadLetter: undefined,
      pushEndpoint: undefined,
    });
    expect(
      subscriptionFacts({
        name: "projects/p/subscriptions/s",
        retryPolicy: { minimumBackoff: "0.5s", maximumBackoff: "60s" },
        deadLetterPolicy: { deadLetterTopic: "projects/p/topics/d" },
      }),
    ).toMatchObject({
      retryPolicy: { minimumBackoffMs: 500, maximumBackoffMs: 60_000 },
      deadLetter: { maxDeliveryAttempts: 5 },
    });
    for (const odd of [
      null,
      [],
      { name: 1 },
      { name: "n", retryPolicy: { minimumBackoff: "10m" } },
      { name: "n", ackDeadlineSeconds: "60" },
    ]) {
      expect(() => subscriptionFacts(odd)).toThrow(/the (answer|subscription)/);
    }
  });
});

const emulator = await emulatorOrSkip("pubsub");
afterAll(async () => {
  await emulator?.stop();
});

describe.skipIf(!emulator)("doctor against the Pub/Sub emulator", () => {
  let cli: BuiltCli;
  const run = `d${Date.now().toString(36)}`;
  const api = (path: string, body: unknown) =>
    fetch(`http://${emulator?.host}/v1/projects/${PROJECT}/${path}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then(async (response) => {
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    });
  const subscription = (name: string) => `projects/${PROJECT}/subscriptions/${run}-${name}`;
  const create = (name: string, settings: Record<string, unknown>) =>
    api(`subscriptions/${run}-${name}`, {
      topic: `projects/${PROJECT}/topics/${run}-orders`,
      ...settings,
    });
  const doctor = (...args: string[]) => cli.run(["doctor", ...args]);

  beforeAll(async () => {
    cli = await buildCli();
    await api(`topics/${run}-orders`, {});
    await api(`topics/${run}-dead`, {});
    const push = {
      pushEndpoint: "http://127.0.0.1:9/push",
      oidcToken: { serviceAccountEmail: "push@idempotency-test.iam.gserviceaccount.com" },
    };
    const deadLetter = (maxDeliveryAttempts: number) => ({
      deadLetterTopic: `projects/${PROJECT}/topics/${run}-dead`,
      maxDeliveryAttempts,
    });
    const retryPolicy = { minimumBackoff: "10s", maximumBackoff: "600s" };
    await create("healthy", {
      ackDeadlineSeconds: 60,
      retryPolicy,
      deadLetterPolicy: deadLetter(10),
      pushConfig: push,
    });
    await create("few-attempts", {
      ackDeadlineSeconds: 60,
      retryPolicy,
      deadLetterPolicy: deadLetter(5),
      pushConfig: push,
    });
    await create("no-auth", {
      ackDeadlineSeconds: 60,
      retryPolicy,
      pushConfig: { pushEndpoint: push.pushEndpoint },
    });
    await create("pull-no-retry", { deadLetterPolicy: deadLetter(20) });
    await create("pull-bare", {});
    await create("pull-exactly-once", {
      ackDeadlineSeconds: 10,
      retryPolicy,
      enableExactlyOnceDelivery: true,
    });
  });
  afterAll(() => cli?.remove());

  it("a healthy subscription: every rule ✓ with its arithmetic, exit 0", async () => {
    const result = await doctor(
      "--subscription",
      subscription("healthy"),
      "--lease",
      "15m",
      "--ttl",
      "1h",
    );
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    expect(result.stdout).toContain(
      "push auth           OIDC token of push@idempotency-test.iam.gserviceaccount.com",
    );
    expect(result.stdout).toContain("retry policy        backoff 10s to 10m");
    expect(result.stdout).toContain(
      `dead-letter policy  to projects/${PROJECT}/topics/${run}-dead after 10 attempts`,
    );
    expect(result.stdout).toMatch(
      /^✓ rule 1: the lease outlasts the work\n {4}lease 900 s > longest run 60 s \(the ack deadline/m,
    );
    expect(result.stdout).toMatch(
      /^✓ rule 2: .+\n {4}lease 900 s \+ ttl 3600 s = 4500 s > longest holder life 3600 s/m,
    );
    expect(result.stdout).toMatch(
      /^✓ rule 3: .+\n {4}max delivery attempts 10 ≥ minimum 10 = 7 contention nacks/m,
    );
    expect(result.stdout).toMatch(/^✓ push auth: pushes are authenticated$/m);
    expect(result.stdout).toMatch(/every rule holds\n$/);
  });

  it("capacity: a mutex per entity on Firestore above its per-document ceiling breaks, with the fix", async () => {
    const result = await doctor(
      "--subscription",
      subscription("healthy"),
      "--store",
      "firestore",
      "--rate",
      "100",
      "--mutex-rate",
      "2",
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^✗ key writes: .+\n {4}2\/s cycles × 2 writes \(claim, release\) = 4\/s on one record > 1\/s/m,
    );
    expect(result.stdout).toMatch(/^✓ write rate: .+\n {4}100\/s deliveries × 2 writes/m);
    const wrong = await doctor("--subscription", subscription("healthy"), "--store", "ftp");
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/--store must be one of datastore, firestore, spanner/);
    const rate = await doctor("--subscription", subscription("healthy"), "--rate", "-3");
    expect(rate.code).toBe(2);
    expect(rate.stderr).toMatch(/--rate must be a number of events per second above 0/);
  });

  it("dead-letter max attempts below the computed minimum: exit 1 naming rule 3", async () => {
    const result = await doctor("--subscription", subscription("few-attempts"));
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^✗ rule 3: dead-letter attempts above the contention retries\n {4}max delivery attempts 5 < minimum 10 = 7 contention nacks in one lease \(attempts at 0, 10, 30, 70, 150, 310, 630 s/m,
    );
    expect(result.stdout).toContain(
      `fix: gcloud pubsub subscriptions update ${run}-few-attempts --max-delivery-attempts=10`,
    );
    expect(result.stdout).toMatch(/1 rule broken\n$/);
  });

  it("a longer lease needs more attempts: 30m breaks the healthy one's 10", async () => {
    const result = await doctor(
      "--subscription",
      subscription("healthy"),
      "--lease",
      "30m",
      "--json",
    );
    expect(result.code).toBe(1);
    const answer = JSON.parse(result.stdout) as {
      ok: boolean;
      rules: Array<{ rule: string; verdict: string }>;
    };
    expect(answer.ok).toBe(false);
    expect(answer.rules.map((r) => [r.rule, r.verdict])).toEqual([
      ["lease", "pass"],
      ["lease+ttl", "pass"],
      ["dead-letter", "fail"],
      ["dead-letter-option", "n/a"],
      ["retry-policy", "pass"],
      ["flow-control", "n/a"],
      ["push-auth", "pass"],
      ["key-write-rate", "n/a"],
      ["write-rate", "n/a"],
    ]);
  });

  it("an unauthenticated push and a dead-letter policy without a retry policy each break their rule", async () => {
    const noAuth = await doctor("--subscription", subscription("no-auth"));
    expect(noAuth.code).toBe(1);
    expect(noAuth.stdout).toMatch(
      /^✗ push auth: pushes are authenticated\n {4}pushes to http:\/\/127\.0\.0\.1:9\/push carry no OIDC token/m,
    );
    expect(noAuth.stdout).toMatch(/^– rule 3: .+\n {4}no dead-letter policy/m);
    const pull = await doctor(
      "--subscription",
      subscription("pull-no-retry"),
      "--max-messages",
      "50",
    );
    expect(pull.code).toBe(1);
    expect(pull.stdout).toMatch(
      /^✗ rule 3: .+\n {4}no retry policy: a nacked copy is redelivered at once/m,
    );
    expect(pull.stdout).toMatch(/^– push auth: .+\n {4}a pull subscription/m);
  });

  it("a pull subscription without a retry policy: exit 1 naming the spin and the gcloud line", async () => {
    const result = await doctor(
      "--subscription",
      subscription("pull-bare"),
      "--max-messages",
      "50",
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("retry policy        none (a nack is redelivered at once)");
    expect(result.stdout).toContain(
      "✗ retry policy: a nack waits out a backoff (retry policy)\n" +
        "    no retry policy: a nack is redelivered at once, so a pull worker spins on contention: each copy that meets a held key is nacked and comes straight back until the holder's lease ends\n" +
        `    fix: gcloud pubsub subscriptions update ${run}-pull-bare --min-retry-delay=10s --max-retry-delay=600s\n`,
    );
    expect(result.stdout).toMatch(/1 rule broken\n$/);
  });

  it("--project with a short name, and a lease in plain milliseconds", async () => {
    const result = await doctor(
      "--project",
      PROJECT,
      "--subscription",
      `${run}-healthy`,
      "--lease",
      "300000",
      "--ttl",
      "1h",
    );
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    expect(result.stdout).toContain(`subscription        ${subscription("healthy")}\n`);
    expect(result.stdout).toContain("service             lease 5m, ttl 1h, heartbeat off\n");
    expect(result.stdout).toMatch(/^ {4}lease 300 s > longest run 60 s/m);
  });

  it("exactly-once pull: a lease under the 60 s minimum ack deadline breaks rule 1", async () => {
    const short = await doctor(
      "--subscription",
      subscription("pull-exactly-once"),
      "--lease",
      "30s",
    );
    expect(short.code).toBe(1);
    expect(short.stdout).toContain(
      "ack deadline        10 s (exactly-once: the client library uses at least 60 s)\n",
    );
    expect(short.stdout).toContain("exactly-once        on (idempotentMessage confirms each ack");
    expect(short.stdout).toMatch(
      /^✗ rule 1: the lease outlasts the work\n {4}lease 30 s ≤ longest run 60 s \(the ack deadline, exactly-once's minimum, above the subscription's 10 s/m,
    );
    const long = await doctor(
      "--subscription",
      subscription("pull-exactly-once"),
      "--lease",
      "90s",
    );
    expect(long.stdout).toMatch(/^✓ rule 1: .+\n {4}lease 90 s > longest run 60 s/m);
  });

  it("a subscription that does not exist: exit 3, naming it", async () => {
    const result = await doctor("--subscription", subscription("missing"));
    expect(result.code).toBe(3);
    expect(result.stderr).toBe(
      `gcp-pubsub-idempotency: there is no subscription ${subscription("missing")}\n`,
    );
  });
});
