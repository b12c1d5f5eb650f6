// The sizing rules of the README ("Sizing invariants") and push auth, as arithmetic over a
// subscription's settings and the lease and ttl the service runs with. Pure: doctor.ts reads
// the subscription, this judges it; the rules about deadLetter and a pull worker's flow
// control are in doctor-dead-letter.ts and doctor-flow-control.ts.

import { type CapacityRuleResult, type CapacitySizing, capacityRules } from "./doctor-capacity.js";
import {
  awareDeadLetterRule,
  type DeadLetterRuleResult,
  deadLetterActs,
  deadLetterOptionRule,
} from "./doctor-dead-letter.js";
import type { SubscriptionFacts } from "./doctor-facts.js";
import { type FlowControlRuleResult, flowControlRule } from "./doctor-flow-control.js";

export { type SubscriptionFacts, subscriptionFacts } from "./doctor-facts.js";

/** How the service that consumes the subscription is configured, from doctor's options. */
export interface Sizing extends CapacitySizing {
  readonly leaseMs: number;
  readonly ttlMs: number;
  /** The lease is renewed while the body runs (`heartbeat`): rule 1 holds by itself. */
  readonly heartbeat: boolean;
  /** The body's longest run; undefined: the ack deadline stands in for it. */
  readonly maxRunMs: number | undefined;
  /** The longest a holder can live: Cloud Run's longest request timeout by default. */
  readonly holderLifeMs: number;
  /** heartbeat.maxHoldMs, when heartbeat is on. */
  readonly maxHoldMs: number;
  /** The service's `deadLetter.maxDeliveryAttempts`; undefined when it sets no deadLetter. */
  readonly maxDeliveryAttempts: number | undefined;
  /** A pull subscriber's flowControl.maxMessages and maxExtensionTime. */
  readonly maxMessages: number | undefined;
  readonly maxExtensionMs: number;
}

export type Verdict = "pass" | "fail" | "n/a";

export interface RuleResult {
  readonly rule:
    | "lease"
    | "lease+ttl"
    | "retry-policy"
    | "push-auth"
    | DeadLetterRuleResult["rule"]
    | FlowControlRuleResult["rule"]
    | CapacityRuleResult["rule"];
  readonly title: string;
  readonly verdict: Verdict;
  /** The check with its numbers, one line. */
  readonly arithmetic: string;
  /** What to change, when the rule fails. */
  readonly fix?: string;
}

/** Cloud Run's longest request timeout, 60 minutes: how long a holder can live by default. */
export const DEFAULT_HOLDER_LIFE_MS = 3_600_000;
/** Pub/Sub's retry policy defaults, for a policy that leaves a bound out. */
/** Beyond the contention nacks: the delivery that runs, and two retries of a real failure. */
const ATTEMPTS_BEYOND_CONTENTION = 3;

const seconds = (ms: number): string => `${+(ms / 1_000).toFixed(3)} s`;

/**
 * The least ack deadline `@google-cloud/pubsub` uses on a subscription with exactly-once
 * delivery: it sets its stream to 60 s and extends each message by at least that, whatever
 * the subscription's own ack deadline says.
 */
export const EXACTLY_ONCE_MIN_ACK_DEADLINE_SECONDS = 60;

/**
 * The ack deadline a pulled message gets: the subscription's, raised to 60 s on an
 * exactly-once pull subscription (exactly-once applies to pull only).
 */
export function effectiveAckDeadlineSeconds(facts: SubscriptionFacts): number {
  const raised = facts.exactlyOnce && facts.pushEndpoint === undefined;
  return raised
    ? Math.max(facts.ackDeadlineSeconds, EXACTLY_ONCE_MIN_ACK_DEADLINE_SECONDS)
    : facts.ackDeadlineSeconds;
}

/**
 * The times (ms after the first delivery) of every delivery attempt of one message that falls
 * inside one lease: a copy that meets a held key is nacked each time, and Pub/Sub's backoff
 * doubles from the minimum up to the maximum between attempts. Undefined without a retry
 * policy: then a nack is redelivered at once, and one lease can use up any number of attempts.
 */
export function contentionAttempts(
  leaseMs: number,
  retry: SubscriptionFacts["retryPolicy"],
): number[] | undefined {
  if (retry === undefined || retry.minimumBackoffMs <= 0) return undefined;
  const times: number[] = [];
  let at = 0;
  let backoff = retry.minimumBackoffMs;
  while (at < leaseMs) {
    times.push(at);
    at += Math.min(backoff, retry.maximumBackoffMs);
    backoff *= 2;
  }
  return times;
}

/** The lowest `maxDeliveryAttempts` rule 3 accepts, with why; undefined when none suffices. */
export function minimumDeliveryAttempts(
  leaseMs: number,
  retry: SubscriptionFacts["retryPolicy"],
): { minimum: number; attempts: number[] } | undefined {
  const attempts = contentionAttempts(leaseMs, retry);
  if (attempts === undefined) return undefined;
  return { minimum: attempts.length + ATTEMPTS_BEYOND_CONTENTION, attempts };
}

/** Every rule, judged. */
export function checkRules(facts: SubscriptionFacts, sizing: Sizing): RuleResult[] {
  return [
    leaseRule(facts, sizing),
    lifeRule(sizing),
    deadLetterRule(facts, sizing),
    deadLetterOptionRule(facts, sizing),
    retryPolicyRule(facts),
    // The run it stands in for is the client's deadline: exactly-once raises it to 60 s.
    flowControlRule({ ...facts, ackDeadlineSeconds: effectiveAckDeadlineSeconds(facts) }, sizing),
    pushAuthRule(facts),
    ...capacityRules(sizing),
  ];
}

function leaseRule(facts: SubscriptionFacts, sizing: Sizing): RuleResult {
  const title = "the lease outlasts the work";
  if (sizing.heartbeat) {
    return {
      rule: "lease",
      title,
      verdict: "pass",
      arithmetic: "heartbeat on: the lease is renewed while the body runs",
    };
  }
  const deadline = effectiveAckDeadlineSeconds(facts);
  const run = sizing.maxRunMs ?? deadline * 1_000;
  const raised =
    deadline > facts.ackDeadlineSeconds
      ? `, exactly-once's minimum, above the subscription's ${facts.ackDeadlineSeconds} s`
      : "";
  const source =
    sizing.maxRunMs === undefined
      ? `the ack deadline${raised}, standing in for the longest run; set --max-run`
      : "--max-run";
  const pass = sizing.leaseMs > run;
  return {
    rule: "lease",
    title,
    verdict: pass ? "pass" : "fail",
    arithmetic: `lease ${seconds(sizing.leaseMs)} ${pass ? ">" : "≤"} longest run ${seconds(run)} (${source})`,
    ...(pass ? {} : { fix: `lengthen the lease above ${seconds(run)}, or turn on heartbeat` }),
  };
}

/**
 * Rule 2 since issue 19: the fence never restarts, so a short ttl no longer lets an old holder
 * act on a newer claim. It still guards `lock` against repeated work: a complete that reaches
 * the store after lease + ttl (a body that outran its lease by more than the ttl, nobody having
 * taken over) is refused, and a later copy runs the body again. A heartbeat moves the expiry
 * with every renew; `mutex` needs nothing of the rule.
 */
function lifeRule(sizing: Sizing): RuleResult {
  const rule = "lease+ttl";
  const title = "lease plus ttl outlasts any holder (lock: a late success still counts)";
  if (sizing.heartbeat) {
    return {
      rule,
      title,
      verdict: "pass",
      arithmetic: "heartbeat on: every renew moves the record's expiry with the lease",
    };
  }
  const total = sizing.leaseMs + sizing.ttlMs;
  const pass = total > sizing.holderLifeMs;
  return {
    rule,
    title,
    verdict: pass ? "pass" : "fail",
    arithmetic: `lease ${seconds(sizing.leaseMs)} + ttl ${seconds(sizing.ttlMs)} = ${seconds(total)} ${pass ? ">" : "≤"} longest holder life ${seconds(sizing.holderLifeMs)} (--holder-life)`,
    ...(pass
      ? {}
      : {
          fix:
            `raise the backend's ttl to at least ${seconds(sizing.holderLifeMs - sizing.leaseMs + 1_000)}, ` +
            "or turn on heartbeat: else a lock body that outruns its lease by more than the ttl " +
            "has its success refused and runs again (the fence holds either way; mutex is unaffected)",
        }),
  };
}

function deadLetterRule(facts: SubscriptionFacts, sizing: Sizing): RuleResult {
  const rule = "dead-letter";
  const title = "dead-letter attempts above the contention retries";
  const { deadLetter } = facts;
  if (deadLetter === undefined) {
    return {
      rule,
      title,
      verdict: "n/a",
      arithmetic:
        "no dead-letter policy: nothing is dead-lettered (an unforeseen poison message is redelivered until its retention ends)",
    };
  }
  if (deadLetterActs(facts, sizing)) {
    const ackDeadlineSeconds = effectiveAckDeadlineSeconds(facts);
    return awareDeadLetterRule({ ...facts, deadLetter, ackDeadlineSeconds }, sizing);
  }
  const needed = minimumDeliveryAttempts(sizing.leaseMs, facts.retryPolicy);
  if (needed === undefined) {
    return {
      rule,
      title,
      verdict: "fail",
      arithmetic: `no retry policy: a nacked copy is redelivered at once, so one lease of ${seconds(sizing.leaseMs)} can use up all ${deadLetter.maxDeliveryAttempts} attempts`,
      fix: `gcloud pubsub subscriptions update ${shortName(facts.name)} ${RETRY_POLICY_FIX}`,
    };
  }
  const { minimum, attempts } = needed;
  const pass = deadLetter.maxDeliveryAttempts >= minimum;
  const times = attempts.map((ms) => +(ms / 1_000).toFixed(3)).join(", ");
  return {
    rule,
    title,
    verdict: pass ? "pass" : "fail",
    arithmetic:
      `max delivery attempts ${deadLetter.maxDeliveryAttempts} ${pass ? "≥" : "<"} minimum ${minimum} = ` +
      `${attempts.length} contention nacks in one lease (attempts at ${times} s, before the lease ends at ${seconds(sizing.leaseMs)}) ` +
      `+ 1 delivery that runs + 2 retries of a real failure`,
    ...(pass
      ? {}
      : {
          fix:
            minimum > 100
              ? "no dead-letter policy allows that many attempts (at most 100): shorten the lease or lengthen the retry backoff"
              : `gcloud pubsub subscriptions update ${shortName(facts.name)} --max-delivery-attempts=${minimum}`,
        }),
  };
}

/** The retry policy's backoff, as gcloud sets it: Pub/Sub's own bounds of a policy. */
export const RETRY_POLICY_FIX = "--min-retry-delay=10s --max-retry-delay=600s";

/**
 * Without a retry policy a nack is redelivered at once: a copy that meets a held key (the
 * contention nack every surface answers) comes straight back, and a pull worker spins against
 * the holder until its lease ends.
 */
function retryPolicyRule(facts: SubscriptionFacts): RuleResult {
  const rule = "retry-policy";
  const title = "a nack waits out a backoff (retry policy)";
  const { retryPolicy } = facts;
  if (retryPolicy !== undefined) {
    return {
      rule,
      title,
      verdict: "pass",
      arithmetic: `a nacked copy comes back after ${seconds(retryPolicy.minimumBackoffMs)}, doubling up to ${seconds(retryPolicy.maximumBackoffMs)}`,
    };
  }
  const effect =
    facts.pushEndpoint === undefined
      ? "a pull worker spins on contention: each copy that meets a held key is nacked and comes straight back until the holder's lease ends"
      : "a push that meets a held key is answered 503 and pushed again at once, held back only by push flow control, until the holder's lease ends";
  return {
    rule,
    title,
    verdict: "fail",
    arithmetic: `no retry policy: a nack is redelivered at once, so ${effect}`,
    fix: `gcloud pubsub subscriptions update ${shortName(facts.name)} ${RETRY_POLICY_FIX}`,
  };
}

function pushAuthRule(facts: SubscriptionFacts): RuleResult {
  const rule = "push-auth";
  const title = "pushes are authenticated";
  if (facts.pushEndpoint === undefined) {
    return { rule, title, verdict: "n/a", arithmetic: "a pull subscription: nothing is pushed" };
  }
  if (facts.pushAuth === undefined) {
    return {
      rule,
      title,
      verdict: "fail",
      arithmetic: `pushes to ${facts.pushEndpoint} carry no OIDC token: anyone who reaches the endpoint can forge a delivery`,
      fix: `gcloud pubsub subscriptions update ${shortName(facts.name)} --push-auth-service-account=SA_EMAIL, and verify it with idempotentHttp({ auth: { audience, serviceAccountEmail } })`,
    };
  }
  const audience = facts.pushAuth.audience ?? facts.pushEndpoint;
  return {
    rule,
    title,
    verdict: "pass",
    arithmetic: `pushes carry an OIDC token of ${facts.pushAuth.serviceAccountEmail} for audience ${audience} (verify it with idempotentHttp({ auth }))`,
  };
}

function shortName(name: string): string {
  return name.slice(name.lastIndexOf("/") + 1);
}
