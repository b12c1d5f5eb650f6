// doctor's flow-control rule for a pull subscriber: it holds up to `flowControl.maxMessages`
// messages at once, and at worst they go through the worker's narrowest resource (one
// connection, one core) one after another, so the last can take maxMessages × the body's
// time. Its claim (the lease, or heartbeat's maxHoldMs) and the client's lease on the
// message (maxExtensionTime) must both cover that. Pure arithmetic, like doctor-rules.ts.

/** What the rule reads of a subscription. */
export interface FlowControlFacts {
  readonly ackDeadlineSeconds: number;
  readonly pushEndpoint: string | undefined;
}

/** What it reads of the service and its subscriber. */
export interface FlowControlSizing {
  readonly leaseMs: number;
  readonly heartbeat: boolean;
  /** heartbeat.maxHoldMs (`--max-hold`). */
  readonly maxHoldMs: number;
  readonly maxRunMs: number | undefined;
  /** The subscriber's flowControl.maxMessages (`--max-messages`); unset: not checked. */
  readonly maxMessages: number | undefined;
  /** The subscriber's maxExtensionTime (`--max-extension`). */
  readonly maxExtensionMs: number;
}

/** A rule's answer, in doctor-rules.ts's RuleResult shape. */
export interface FlowControlRuleResult {
  readonly rule: "flow-control";
  readonly title: string;
  readonly verdict: "pass" | "fail" | "n/a";
  readonly arithmetic: string;
  readonly fix?: string;
}

/** @google-cloud/pubsub's defaults: flowControl.maxMessages, and maxExtensionTime. */
export const CLIENT_MAX_MESSAGES = 1_000;
export const CLIENT_MAX_EXTENSION_MS = 60 * 60_000;

const seconds = (ms: number): string => `${+(ms / 1_000).toFixed(3)} s`;

/** maxMessages × the longest run fits the claim and the message's lease. */
export function flowControlRule(
  facts: FlowControlFacts,
  sizing: FlowControlSizing,
): FlowControlRuleResult {
  const rule = "flow-control";
  const title = "the messages a pull worker holds at once fit their claims (flowControl)";
  if (facts.pushEndpoint !== undefined) {
    return {
      rule,
      title,
      verdict: "n/a",
      arithmetic: "a push subscription: Pub/Sub's push flow control, not the client's, bounds it",
    };
  }
  if (sizing.maxMessages === undefined) {
    return {
      rule,
      title,
      verdict: "n/a",
      arithmetic: `not checked: give the subscriber's flowControl.maxMessages with --max-messages (the client's default, ${CLIENT_MAX_MESSAGES}, is rarely what a worker whose runs share one core or one connection can hold)`,
    };
  }
  const { maxMessages } = sizing;
  const run = sizing.maxRunMs ?? facts.ackDeadlineSeconds * 1_000;
  const source =
    sizing.maxRunMs === undefined ? "the ack deadline standing in; set --max-run" : "--max-run";
  const claimMs = sizing.heartbeat ? sizing.maxHoldMs : sizing.leaseMs;
  const claim = sizing.heartbeat ? "heartbeat's maxHoldMs (--max-hold)" : "the lease";
  const total = maxMessages * run;
  const coverMs = Math.min(claimMs, sizing.maxExtensionMs);
  const pass = total <= coverMs;
  const most = Math.floor(coverMs / run);
  return {
    rule,
    title,
    verdict: pass ? "pass" : "fail",
    arithmetic:
      `maxMessages ${maxMessages} (--max-messages) × longest run ${seconds(run)} (${source}) = ${seconds(total)} ` +
      `${pass ? "≤" : ">"} ${seconds(coverMs)}, the shorter of ${claim} ${seconds(claimMs)} and the message's lease ${seconds(sizing.maxExtensionMs)} (maxExtensionTime, --max-extension)`,
    ...(pass
      ? {}
      : {
          fix:
            most >= 1
              ? `subscribe with flowControl: { maxMessages: ${most} }${sizing.heartbeat ? "" : ", or turn on heartbeat"}`
              : `one run outlasts ${seconds(coverMs)}: ${sizing.heartbeat ? "raise heartbeat.maxHoldMs" : "turn on heartbeat"} and the subscriber's maxExtensionTime`,
        }),
  };
}
