// doctor's rules about the service's `deadLetter` option: does it match the subscription's
// dead-letter policy (and can it act at all), and rule 3 as it reads once it does: the last
// attempts wait for the holder, so contention costs attempts only when the holder outlives
// that wait. Pure arithmetic, like doctor-rules.ts, which calls it.

/** What these rules read of a subscription (a part of doctor-rules.ts's SubscriptionFacts). */
export interface DeadLetterFacts {
  readonly name: string;
  readonly ackDeadlineSeconds: number;
  readonly deadLetter: { readonly topic: string; readonly maxDeliveryAttempts: number } | undefined;
  readonly pushEndpoint: string | undefined;
  /** A push without the envelope (`pushConfig.noWrapper`): it carries no deliveryAttempt. */
  readonly unwrapped: boolean;
}

/** What they read of the service (a part of doctor-rules.ts's Sizing). */
export interface DeadLetterSizing {
  /** The service's `deadLetter.maxDeliveryAttempts` (`--max-delivery-attempts`); undefined: not set. */
  readonly maxDeliveryAttempts: number | undefined;
  readonly maxRunMs: number | undefined;
  /** How long the pull client keeps a message leased (`--max-extension`). */
  readonly maxExtensionMs: number;
}

/** A rule's answer, in doctor-rules.ts's RuleResult shape. */
export interface DeadLetterRuleResult {
  readonly rule: "dead-letter" | "dead-letter-option";
  readonly title: string;
  readonly verdict: "pass" | "fail" | "n/a";
  readonly arithmetic: string;
  readonly fix?: string;
}

/** The attempts before the last that wait too (src/surfaces/dead-letter.ts). */
const MARGIN = 1;
const seconds = (ms: number): string => `${+(ms / 1_000).toFixed(3)} s`;
const shortName = (name: string): string => name.slice(name.lastIndexOf("/") + 1);

/** True when the service's deadLetter matches the policy and can act on its messages. */
export function deadLetterActs(facts: DeadLetterFacts, sizing: DeadLetterSizing): boolean {
  return (
    sizing.maxDeliveryAttempts !== undefined &&
    facts.deadLetter?.maxDeliveryAttempts === sizing.maxDeliveryAttempts &&
    !facts.unwrapped
  );
}

/** Does `deadLetter.maxDeliveryAttempts` match the policy, and does Pub/Sub send the attempt? */
export function deadLetterOptionRule(
  facts: DeadLetterFacts,
  sizing: DeadLetterSizing,
): DeadLetterRuleResult {
  const rule = "dead-letter-option";
  const title = "the service's deadLetter matches the dead-letter policy";
  const service = sizing.maxDeliveryAttempts;
  const policy = facts.deadLetter?.maxDeliveryAttempts;
  const update = `gcloud pubsub subscriptions update ${shortName(facts.name)}`;
  if (service === undefined) {
    return {
      rule,
      title,
      verdict: "n/a",
      arithmetic:
        policy === undefined
          ? "no dead-letter policy, and no --max-delivery-attempts (the service's deadLetter)"
          : `no --max-delivery-attempts: with deadLetter: { maxDeliveryAttempts: ${policy} } the last attempts would wait for a holder instead of nacking (pass --max-delivery-attempts ${policy} if the service sets it)`,
    };
  }
  if (policy === undefined) {
    return {
      rule,
      title,
      verdict: "fail",
      arithmetic: `deadLetter.maxDeliveryAttempts ${service}, but the subscription has no dead-letter policy: Pub/Sub sends no deliveryAttempt, so deadLetter cannot act`,
      fix: `${update} --dead-letter-topic=TOPIC --max-delivery-attempts=${service}, or drop deadLetter`,
    };
  }
  if (facts.unwrapped) {
    return {
      rule,
      title,
      verdict: "fail",
      arithmetic:
        "an unwrapped push (no envelope) carries no deliveryAttempt, so deadLetter cannot act",
      fix: "push in the envelope, which carries deliveryAttempt: set the push config again without --push-no-wrapper",
    };
  }
  if (service === policy) {
    return {
      rule,
      title,
      verdict: "pass",
      arithmetic: `deadLetter.maxDeliveryAttempts ${service} = the policy's ${policy}: attempts ${policy - MARGIN} and ${policy} wait for a holder, and onExhausted sees attempt ${policy}`,
    };
  }
  const effect =
    service > policy
      ? `the wait starts at attempt ${service - MARGIN}, which Pub/Sub never sends: contention still dead-letters, and onExhausted never runs`
      : `onExhausted runs on every nack from attempt ${service} on, before Pub/Sub dead-letters at ${policy}`;
  return {
    rule,
    title,
    verdict: "fail",
    arithmetic: `deadLetter.maxDeliveryAttempts ${service} ≠ the policy's ${policy}: ${effect}`,
    fix: `set deadLetter: { maxDeliveryAttempts: ${policy} }, or ${update} --max-delivery-attempts=${service}`,
  };
}

/**
 * Rule 3 once deadLetter acts: attempts before the last two may all go to contention, and the
 * last two wait for the holder as long as the surface holds a delivery: a push until its ack
 * deadline (Pub/Sub stops listening then), a pulled message while the client keeps its lease.
 * Contention alone dead-letters a message only when its holder runs longer than that.
 */
export function awareDeadLetterRule(
  facts: DeadLetterFacts & { readonly deadLetter: { readonly maxDeliveryAttempts: number } },
  sizing: DeadLetterSizing,
): DeadLetterRuleResult {
  const push = facts.pushEndpoint !== undefined;
  const waitMs = push ? facts.ackDeadlineSeconds * 1_000 : sizing.maxExtensionMs;
  const bound = push
    ? "the ack deadline, as long as Pub/Sub listens to a push"
    : "the message's lease (maxExtensionTime, --max-extension)";
  const run = sizing.maxRunMs ?? facts.ackDeadlineSeconds * 1_000;
  const source =
    sizing.maxRunMs === undefined ? "the ack deadline standing in; set --max-run" : "--max-run";
  const pass = run <= waitMs;
  const max = facts.deadLetter.maxDeliveryAttempts;
  return {
    rule: "dead-letter",
    title: "contention does not use up the dead-letter attempts (deadLetter)",
    verdict: pass ? "pass" : "fail",
    arithmetic:
      `deadLetter: attempts ${max - MARGIN} and ${max} of ${max} wait for the holder up to ${seconds(waitMs)} (${bound}); ` +
      `longest run ${seconds(run)} (${source}) ${pass ? "≤" : ">"} ${seconds(waitMs)}`,
    ...(pass
      ? {}
      : {
          fix: push
            ? `raise the ack deadline above ${seconds(run)} (at most 600 s: gcloud pubsub subscriptions update ${shortName(facts.name)} --ack-deadline=…), or shorten the work`
            : `raise the subscriber's maxExtensionTime (and deadLetter.maxWaitMs) above ${seconds(run)}, or shorten the work`,
        }),
  };
}
