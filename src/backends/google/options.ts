// The options every Google lock takes (a client, projectId, databaseId, ttlMs, retry,
// recordIds), read once and checked before any I/O; and the checks of a client option and of
// a store name.
import { DEFAULT_TTL_MS } from "../../core/constants.js";
import { InvalidConfiguration } from "../../core/errors.js";
import type { RetryPolicy } from "../../core/retry.js";
import {
  describe,
  knownOptions,
  readOptions,
  stringOption,
  ttlOption,
} from "../../core/validate.js";
import { hasMethods } from "../shared/has-methods.js";
import { LazyClient } from "./lazy-client.js";
import { type RecordIdLayout, recordIdsOption } from "./record-ids.js";
import { resolveRetry } from "./retry-options.js";
import { CLOCK_OPTION, type LeaseClock, StoreClock } from "./store-clock.js";

/** A project id: printable ASCII without spaces (`my-project`, `example.com:my-project`). */
const PROJECT_PATTERN = /^[\x21-\x7e]{1,100}$/;
/** A database id: `(default)` or a lowercase name. */
const DATABASE_PATTERN = /^(?:\(default\)|[a-z][a-z0-9-]{0,62})$/;

/** How a lock takes its client: the option's name, what it must look like, how to make one. */
export interface GoogleClientSpec<C> {
  /** The option naming a client to use, e.g. `datastore`. */
  readonly option: string;
  /** Methods a given client must have. */
  readonly methods: readonly string[];
  /** What a given client should be, for the refusal. */
  readonly what: string;
  /** Make the client on first use, from the `projectId` / `databaseId` options. */
  readonly create: (settings: Readonly<Record<string, string>>) => Promise<C>;
}

/** The options every Google lock takes, checked; plus the lock's own, read but not checked. */
export interface GoogleLockSetup<C, K extends string> {
  readonly client: LazyClient<C>;
  /** Whether the caller gave a client (else one is made on first use, with the driver). */
  readonly clientGiven: boolean;
  readonly ttlMs: number;
  readonly retry: RetryPolicy;
  /** How the records are named (the `recordIds` option; record-ids.ts). */
  readonly recordIds: RecordIdLayout;
  /** The store's time, as learned from its answers (the tests may put another clock here). */
  readonly clock: LeaseClock;
  readonly own: { readonly [P in K]?: unknown };
}

/**
 * Read every option of a Google lock once (see `readOptions`) and check the shared ones: the
 * client, `projectId`, `databaseId`, `ttlMs`, `retry` and `recordIds`. The lock checks `ownNames` itself.
 */
export function googleLockOptions<C, K extends string>(
  where: string,
  options: unknown,
  client: GoogleClientSpec<C>,
  ownNames: readonly K[],
): GoogleLockSetup<C, K> {
  const shared = ["projectId", "databaseId", "ttlMs", "retry", "recordIds"] as const;
  const names = [client.option, ...shared, ...ownNames];
  const read = readOptions(where, options, true, names, knownOptions(names, "backend")) as {
    readonly [P in string]?: unknown;
  };
  const given = clientOption<C>(client.option, read[client.option], client.methods, client.what);
  const settings: Record<string, string> = {};
  const projectId = stringOption(
    "projectId",
    read.projectId,
    PROJECT_PATTERN,
    "a project id (1 to 100 printable ASCII characters, no spaces)",
  );
  const databaseId = stringOption(
    "databaseId",
    read.databaseId,
    DATABASE_PATTERN,
    'a database id ("(default)", or lowercase letters, digits and hyphens, at most 63)',
  );
  if (projectId !== undefined) settings.projectId = projectId;
  if (databaseId !== undefined) settings.databaseId = databaseId;
  const own: { [P in K]?: unknown } = {};
  for (const name of ownNames) own[name] = read[name];
  return {
    client: new LazyClient(given, () => client.create(settings)),
    clientGiven: given !== undefined,
    ttlMs: ttlOption(read.ttlMs, DEFAULT_TTL_MS),
    retry: resolveRetry(read.retry, where),
    recordIds: recordIdsOption(read.recordIds),
    clock: clockOption(options) ?? new StoreClock(),
    own,
  };
}

/** The clock under {@link CLOCK_OPTION}, a key no user can name (the tests' process clock). */
function clockOption(options: unknown): LeaseClock | undefined {
  if (options === null || typeof options !== "object") return undefined;
  try {
    const clock = (options as { [CLOCK_OPTION]?: unknown })[CLOCK_OPTION];
    return hasMethods(clock, ["stamp", "now", "learn"]) ? (clock as LeaseClock) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An optional client-like option: `undefined`, or an object with every one of `methods`.
 * `what` says what was expected, for the message.
 */
function clientOption<T>(
  name: string,
  value: unknown,
  methods: readonly string[],
  what: string,
): T | undefined {
  if (value === undefined) return undefined;
  if (!hasMethods(value, methods)) {
    throw new InvalidConfiguration(
      `${name} must be ${what} (with ${methods.map((m) => `${m}()`).join(", ")}), got ${describe(value)}`,
    );
  }
  return value as T;
}

const encoder = new TextEncoder();

/** A lone surrogate (no exact UTF-8 form). No repeated group: a long name cannot overflow the stack. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * A store name (kind, collection): a well-formed string without U+0000 whose UTF-8 form is
 * 1 to `maxBytes` bytes, matching `pattern` too. Otherwise a configuration error naming the
 * option and saying what is `allowed`.
 */
export function nameOption(
  name: string,
  value: unknown,
  maxBytes: number,
  pattern: RegExp,
  allowed: string,
): string | undefined {
  if (value === undefined) return undefined;
  if (
    typeof value !== "string" ||
    value.length === 0 ||
    value.includes("\0") ||
    encoder.encode(value).length > maxBytes ||
    LONE_SURROGATE.test(value) ||
    !pattern.test(value)
  ) {
    throw new InvalidConfiguration(`${name} must be ${allowed}, got ${describe(value)}`);
  }
  return value;
}
