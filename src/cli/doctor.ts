// `doctor --subscription projects/P/subscriptions/S`: read the subscription through the Pub/Sub
// admin API (REST, with Node's fetch) and judge it by the README's sizing rules and push auth.
import { RECORD_ID_LAYOUTS, type RecordIdLayout } from "../backends/google/record-ids.js";
import { DEFAULT_LEASE_MS, DEFAULT_MAX_HOLD_MS, DEFAULT_TTL_MS } from "../core/constants.js";
import { importPeer } from "../core/peer.js";
import {
  COMMON_OPTIONS,
  type Command,
  EXIT,
  flag,
  formatDuration,
  optionText,
  parseDuration,
  parseWhole,
  shown,
  UsageError,
} from "./args.js";
import { CAPACITY_STORES, type CapacityStore } from "./doctor-capacity.js";
import { CLIENT_MAX_EXTENSION_MS, CLIENT_MAX_MESSAGES } from "./doctor-flow-control.js";
import {
  checkRules,
  DEFAULT_HOLDER_LIFE_MS,
  EXACTLY_ONCE_MIN_ACK_DEADLINE_SECONDS,
  effectiveAckDeadlineSeconds,
  type RuleResult,
  type Sizing,
  type SubscriptionFacts,
  subscriptionFacts,
} from "./doctor-rules.js";
import { formatSpan, writeJson } from "./output.js";

/** A project id (a domain-scoped one too), and a subscription id, as Pub/Sub allows them. */
const PROJECT = "[a-z0-9.:-]{1,100}";
const SHORT_NAME = "[A-Za-z][A-Za-z0-9._~+%-]{2,254}";
const SUBSCRIPTION = new RegExp(`^projects/(${PROJECT})/subscriptions/(${SHORT_NAME})$`);
const API = "https://pubsub.googleapis.com";
const SCOPE = "https://www.googleapis.com/auth/pubsub";
const REQUEST_TIMEOUT_MS = 15_000;

export const doctorCommand: Command = {
  spec: {
    name: "doctor",
    options: [
      {
        name: "--subscription",
        value: "NAME",
        help: "the subscription: projects/P/subscriptions/S, or S with --project (required)",
      },
      {
        name: "--project",
        value: "ID",
        help: "the project of a short --subscription name",
      },
      {
        name: "--lease",
        value: "DURATION",
        help: "the service's leaseMs: 300s, 5m, 1h, 250ms, or plain milliseconds (default 15m)",
      },
      { name: "--ttl", value: "DURATION", help: "the backend's ttlMs (default 1h)" },
      { name: "--heartbeat", help: "the service runs with heartbeat on" },
      {
        name: "--max-run",
        value: "DURATION",
        help: "the body's longest run (default: the ack deadline stands in)",
      },
      {
        name: "--holder-life",
        value: "DURATION",
        help: "the longest a holder can live (default 60m, Cloud Run's longest request)",
      },
      {
        name: "--max-hold",
        value: "DURATION",
        help: "with --heartbeat: the service's heartbeat.maxHoldMs (default 60m)",
      },
      {
        name: "--max-delivery-attempts",
        value: "N",
        help: "the service's deadLetter.maxDeliveryAttempts (default: it sets no deadLetter)",
      },
      {
        name: "--max-messages",
        value: "N",
        help: "pull: the subscriber's flowControl.maxMessages (unset: flow control not judged)",
      },
      {
        name: "--max-extension",
        value: "DURATION",
        help: "pull: the subscriber's maxExtensionTime (default 60m, the client's)",
      },
      {
        name: "--store",
        value: "NAME",
        help: `the lock's store, for the capacity rules: ${CAPACITY_STORES.join(", ")}`,
      },
      { name: "--rate", value: "N", help: "deliveries per second at peak (capacity rules)" },
      {
        name: "--mutex-rate",
        value: "N",
        help: "mutex cycles per second on one key at peak (capacity rules)",
      },
      {
        name: "--record-ids",
        value: "LAYOUT",
        help: "the lock's recordIds: spread (default), plain or migrating (capacity rules)",
      },
      {
        name: "--expiry-unindexed",
        help: "the records' expiresAt is exempt from indexing (capacity rules)",
      },
      ...COMMON_OPTIONS,
    ],
    positional: "argument",
    minPositionals: 0,
    maxPositionals: 0,
  },
  summary: "check a subscription against the sizing rules and push auth (exit 1 on a violation)",
  usage: "--subscription projects/P/subscriptions/S | --project P --subscription S",
  description:
    "Reads the subscription through the Pub/Sub admin API (ack deadline, retry policy,\n" +
    "dead-letter policy and max attempts, push endpoint and auth, exactly-once delivery) and\n" +
    "checks the three sizing rules, the service's deadLetter against the policy, a pull\n" +
    "worker's flow control and push auth, each ✓ or ✗ with its arithmetic.\n" +
    "Exits 1 when a rule is broken. Credentials: Application Default Credentials (needs\n" +
    "google-auth-library); with PUBSUB_EMULATOR_HOST set, the emulator, without any.",
  async run(args, io) {
    const name = subscriptionName(
      optionText(args, "--subscription"),
      optionText(args, "--project"),
    );
    const sizing = sizingOf(args);
    const facts = subscriptionFacts(await readSubscription(name, io.env));
    const rules = checkRules(facts, sizing);
    const broken = rules.filter((rule) => rule.verdict === "fail");
    if (flag(args, "--json")) {
      writeJson(io, { subscription: facts, sizing, rules, ok: broken.length === 0 });
    } else {
      io.out(report(facts, sizing, rules));
    }
    return broken.length === 0 ? EXIT.ok : EXIT.no;
  },
};

/**
 * The subscription's full name: `--subscription` as given when it is one, else built from a
 * short name and `--project`. Refuses a short name without `--project` (naming both fixes), a
 * full name whose project `--project` contradicts, and characters Pub/Sub does not allow.
 */
export function subscriptionName(given: string | undefined, project: string | undefined): string {
  if (project !== undefined && !new RegExp(`^${PROJECT}$`).test(project)) {
    throw new UsageError(
      `--project must be a project id (lowercase letters, digits, -, ., :), got ${shown(project)}`,
    );
  }
  if (given === undefined) {
    throw new UsageError(
      "doctor needs --subscription projects/P/subscriptions/S (or --project P --subscription S)",
    );
  }
  const full = SUBSCRIPTION.exec(given);
  if (full !== null) {
    if (project !== undefined && project !== full[1]) {
      throw new UsageError(
        `--subscription ${shown(given)} is in project ${shown(full[1] as string)}, but --project says ${shown(project)}: drop one`,
      );
    }
    return given;
  }
  if (!new RegExp(`^${SHORT_NAME}$`).test(given)) {
    throw new UsageError(
      `--subscription must be projects/P/subscriptions/S or a subscription id S (a letter, then 2 to 254 of letters, digits and - . _ ~ + %), got ${shown(given)}`,
    );
  }
  if (project === undefined) {
    throw new UsageError(
      `--subscription ${shown(given)} is a short name and no project is given: pass --project P (doctor then reads projects/P/subscriptions/${given}), or the full name --subscription projects/P/subscriptions/${given}`,
    );
  }
  return `projects/${project}/subscriptions/${given}`;
}

function sizingOf(args: Parameters<Command["run"]>[0]): Sizing {
  const duration = (name: string, fallback: number | undefined) => {
    const text = optionText(args, name);
    return text === undefined ? fallback : parseDuration(name, text);
  };
  const whole = (name: string, min: number, max: number) => {
    const text = optionText(args, name);
    return text === undefined ? undefined : parseWhole(name, text, min, max);
  };
  return {
    leaseMs: duration("--lease", DEFAULT_LEASE_MS) as number,
    ttlMs: duration("--ttl", DEFAULT_TTL_MS) as number,
    heartbeat: flag(args, "--heartbeat"),
    maxRunMs: duration("--max-run", undefined),
    holderLifeMs: duration("--holder-life", DEFAULT_HOLDER_LIFE_MS) as number,
    maxHoldMs: duration("--max-hold", DEFAULT_MAX_HOLD_MS) as number,
    maxDeliveryAttempts: whole("--max-delivery-attempts", 5, 100),
    // Unset: the rule says what to give, not a failure of a default nobody chose.
    maxMessages: whole("--max-messages", 1, 1_000_000),
    maxExtensionMs: duration("--max-extension", CLIENT_MAX_EXTENSION_MS) as number,
    store: storeOf(optionText(args, "--store")),
    rate: rateOf("--rate", optionText(args, "--rate")),
    mutexRate: rateOf("--mutex-rate", optionText(args, "--mutex-rate")),
    recordIds: recordIdsOf(optionText(args, "--record-ids")),
    expiryUnindexed: flag(args, "--expiry-unindexed"),
  };
}

function recordIdsOf(text: string | undefined): RecordIdLayout {
  if (text === undefined) return "spread";
  const layout = RECORD_ID_LAYOUTS.find((name) => name === text);
  if (layout === undefined) {
    throw new UsageError(
      `--record-ids must be ${RECORD_ID_LAYOUTS.join(", ")} (the lock's recordIds), got ${shown(text)}`,
    );
  }
  return layout;
}

function storeOf(text: string | undefined): CapacityStore | undefined {
  if (text === undefined) return undefined;
  const store = CAPACITY_STORES.find((name) => name === text);
  if (store === undefined) {
    throw new UsageError(
      `--store must be one of ${CAPACITY_STORES.join(", ")}, got ${shown(text)}`,
    );
  }
  return store;
}

/** A rate per second: a positive decimal number (0.2 is one every 5 s), at most a billion. */
function rateOf(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const rate = /^\d{1,10}(?:\.\d{1,6})?$/.test(text) ? Number(text) : Number.NaN;
  if (!(rate > 0 && rate <= 1e9)) {
    throw new UsageError(
      `${name} must be a number of events per second above 0 (such as 250 or 0.5), got ${shown(text)}`,
    );
  }
  return rate;
}

/** The subscription's REST form, from the emulator when PUBSUB_EMULATOR_HOST names one. */
async function readSubscription(
  name: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<unknown> {
  const emulator = env.PUBSUB_EMULATOR_HOST;
  const base = emulator ? `http://${emulator}` : API;
  const headers: Record<string, string> = emulator
    ? {}
    : { authorization: `Bearer ${await accessToken()}` };
  let response: Response;
  try {
    response = await fetch(`${base}/v1/${name}`, {
      headers,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    throw new Error(`the Pub/Sub admin API at ${base} did not answer: ${(error as Error).message}`);
  }
  if (response.status === 404) throw new Error(`there is no subscription ${name}`);
  if (response.status === 403) {
    throw new Error(`permission denied reading ${name}: the caller needs pubsub.subscriptions.get`);
  }
  if (!response.ok) {
    const text = (await response.text()).slice(0, 300).replace(/\s+/g, " ");
    throw new Error(`the Pub/Sub admin API answered ${response.status}: ${text}`);
  }
  try {
    return await response.json();
  } catch {
    throw new Error("the Pub/Sub admin API's answer is not JSON");
  }
}

/** An access token from Application Default Credentials, through google-auth-library. */
async function accessToken(): Promise<string> {
  let auth: typeof import("google-auth-library");
  try {
    auth = await importPeer(
      "doctor (for credentials)",
      "google-auth-library",
      () => import("google-auth-library"),
    );
  } catch (error) {
    // Either text names the fix: the install command, or why the installed library fails.
    throw new Error(`${(error as Error).message}, or set PUBSUB_EMULATOR_HOST for the emulator`);
  }
  const token = await new auth.GoogleAuth({ scopes: SCOPE }).getAccessToken();
  if (!token) throw new Error("Application Default Credentials gave no access token");
  return token;
}

const MARK: Readonly<Record<RuleResult["verdict"], string>> = { pass: "✓", fail: "✗", "n/a": "–" };
const RULE_LABEL: Readonly<Record<RuleResult["rule"], string>> = {
  lease: "rule 1",
  "lease+ttl": "rule 2",
  "dead-letter": "rule 3",
  "dead-letter-option": "deadLetter",
  "retry-policy": "retry policy",
  "flow-control": "flow control",
  "push-auth": "push auth",
  "key-write-rate": "key writes",
  "write-rate": "write rate",
};

function report(facts: SubscriptionFacts, sizing: Sizing, rules: RuleResult[]): string {
  const lines = [
    `subscription        ${facts.name}`,
    `topic               ${facts.topic ?? "(deleted)"}`,
    `delivery            ${facts.pushEndpoint === undefined ? "pull" : `push to ${facts.pushEndpoint}`}`,
    `push auth           ${
      facts.pushEndpoint === undefined
        ? "–"
        : facts.pushAuth === undefined
          ? "none"
          : `OIDC token of ${facts.pushAuth.serviceAccountEmail}${facts.pushAuth.audience ? `, audience ${facts.pushAuth.audience}` : ""}`
    }`,
    `ack deadline        ${facts.ackDeadlineSeconds} s${
      effectiveAckDeadlineSeconds(facts) > facts.ackDeadlineSeconds
        ? ` (exactly-once: the client library uses at least ${EXACTLY_ONCE_MIN_ACK_DEADLINE_SECONDS} s)`
        : ""
    }`,
    `retry policy        ${
      facts.retryPolicy === undefined
        ? "none (a nack is redelivered at once)"
        : `backoff ${formatSpan(facts.retryPolicy.minimumBackoffMs)} to ${formatSpan(facts.retryPolicy.maximumBackoffMs)}`
    }`,
    `dead-letter policy  ${
      facts.deadLetter === undefined
        ? "none"
        : `to ${facts.deadLetter.topic} after ${facts.deadLetter.maxDeliveryAttempts} attempts`
    }`,
    `exactly-once        ${
      facts.exactlyOnce
        ? facts.pushEndpoint === undefined
          ? "on (idempotentMessage confirms each ack: a refused one is logged ack_failed)"
          : "on, but a push subscription: exactly-once covers pull only"
        : "off"
    }`,
    `service             lease ${formatDuration(sizing.leaseMs)}, ttl ${formatDuration(sizing.ttlMs)}, heartbeat ${sizing.heartbeat ? "on" : "off"}`,
    `deadLetter          ${sizing.maxDeliveryAttempts === undefined ? "not set" : `maxDeliveryAttempts ${sizing.maxDeliveryAttempts}`}`,
    ...(facts.pushEndpoint === undefined
      ? [
          `subscriber          flowControl.maxMessages ${sizing.maxMessages ?? `${CLIENT_MAX_MESSAGES} (the client's default; not checked)`}, maxExtensionTime ${formatDuration(sizing.maxExtensionMs)}`,
        ]
      : []),
    "",
  ];
  for (const rule of rules) {
    lines.push(`${MARK[rule.verdict]} ${RULE_LABEL[rule.rule]}: ${rule.title}`);
    lines.push(`    ${rule.arithmetic}`);
    if (rule.fix !== undefined) lines.push(`    fix: ${rule.fix}`);
  }
  const broken = rules.filter((rule) => rule.verdict === "fail").length;
  lines.push(
    "",
    broken === 0 ? "every rule holds" : `${broken} rule${broken === 1 ? "" : "s"} broken`,
  );
  return `${lines.join("\n")}\n`;
}
