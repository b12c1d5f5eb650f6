// The command line as hostile input, in process: the parser, durations and backend URLs, by
// example and by property (fast-check). Whatever the arguments, the answer is a parse or a
// UsageError with one line naming what is wrong; never another exception, never any I/O.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type CommandSpec,
  formatDuration,
  parseArgs,
  parseDuration,
  UsageError,
  wantsHelp,
} from "../../src/cli/args.js";
import { runCli } from "../../src/cli/main.js";
import { parseStoreUrl, redact } from "../../src/cli/store/url.js";
import { MAX_TTL_MS } from "../../src/core/constants.js";
import { fakeTerminal } from "../support/cli.js";

const spec: CommandSpec = {
  name: "inspect",
  options: [
    { name: "--backend", value: "URL", help: "" },
    { name: "--json", help: "" },
  ],
  positional: "KEY",
  minPositionals: 1,
  maxPositionals: 3,
};

function usageMessage(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof UsageError) return error.message;
    throw error;
  }
  throw new Error("expected a UsageError");
}

describe("parseArgs", () => {
  it.each<[string, string[], object]>([
    ["--name value", ["--backend", "redis://h", "k"], { "--backend": "redis://h" }],
    ["--name=value", ["--backend=redis://h", "k"], { "--backend": "redis://h" }],
    ["a value with = inside", ["--backend=a=b", "k"], { "--backend": "a=b" }],
    ["a flag", ["k", "--json"], { "--json": true }],
  ])("reads %s", (_, args, options) => {
    expect(Object.fromEntries(parseArgs(spec, args).options)).toEqual(options);
  });

  it("takes keys after -- as they are, dashes and all; a lone - is a key", () => {
    expect(parseArgs(spec, ["--json", "--", "--backend", "-x"]).positionals).toEqual([
      "--backend",
      "-x",
    ]);
    expect(parseArgs(spec, ["-"]).positionals).toEqual(["-"]);
  });

  it.each<[string, string[], RegExp]>([
    ["an unknown option", ["--jsn", "k"], /^unknown option "--jsn" for inspect; see .+ --help$/],
    ["a single-dash option", ["-x", "k"], /unknown option "-x"/],
    ["a repeated option", ["--json", "--json", "k"], /--json is given twice/],
    ["a flag with a value", ["--json=yes", "k"], /--json takes no value/],
    ["a missing value", ["k", "--backend"], /--backend needs a value \(URL\)/],
    ["an empty value", ["--backend=", "k"], /--backend needs a non-empty value/],
    ["no key", ["--json"], /inspect needs at least one KEY/],
    ["too many keys", ["a", "b", "c", "d"], /at most 3 KEY, got 4/],
    ["a NUL in a key", ["a\0b"], /argument 1 contains a NUL character \(U\+0000\) at index 1/],
    ["a NUL in a value", ["--backend", "redis://h\0", "k"], /argument 2 contains a NUL/],
  ])("refuses %s", (_, args, message) => {
    expect(usageMessage(() => parseArgs(spec, args))).toMatch(message);
  });

  it("finds --help before a --, not after", () => {
    expect(wantsHelp(["k", "-h"])).toBe(true);
    expect(wantsHelp(["--", "--help"])).toBe(false);
  });

  it("any argument list: a parse of NUL-free values, or one UsageError line", () => {
    const token = fc.oneof(
      fc.string(),
      fc.constantFrom("--backend", "--json", "--", "-", "--json=1", "--backend=", "-h", "\0"),
      fc.string().map((s) => `--${s}`),
      fc.string({ unit: "binary" }),
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 8 }), (args) => {
        let parsed: ReturnType<typeof parseArgs>;
        try {
          parsed = parseArgs(spec, args);
        } catch (error) {
          expect(error).toBeInstanceOf(UsageError);
          const { message } = error as UsageError;
          expect(message).not.toMatch(/[\n\r\0]/);
          expect(message.length).toBeLessThan(300);
          return;
        }
        const values = [...parsed.positionals, ...parsed.options.values()];
        for (const value of values)
          if (typeof value === "string") expect(value).not.toContain("\0");
        for (const name of parsed.options.keys()) expect(["--backend", "--json"]).toContain(name);
        expect(parsed.positionals.length).toBeGreaterThanOrEqual(1);
        expect(parsed.positionals.length).toBeLessThanOrEqual(3);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("parseDuration", () => {
  it.each([
    ["250ms", 250],
    ["300s", 300_000],
    ["5m", 300_000],
    ["15m", 900_000],
    ["1h", 3_600_000],
    ["1h30m", 5_400_000],
    ["2d", 172_800_000],
    ["1m1ms", 60_001],
    ["300000", 300_000],
    ["1", 1],
    [String(MAX_TTL_MS), MAX_TTL_MS],
  ])("%s is %i ms", (text, ms) => {
    expect(parseDuration("--lease", text)).toBe(ms);
  });

  it.each([
    "m",
    "0s",
    "0",
    "000",
    "1.5h",
    "-1m",
    "+5m",
    "1 h",
    " 5m",
    "5m ",
    "5M",
    "1y",
    "11y",
    "5min",
    "1e3",
    "0x10",
    "",
    `${"1".repeat(41)}s`,
    "4000d",
    String(MAX_TTL_MS + 1),
  ])("refuses %j, naming the option and the forms it takes", (text) => {
    expect(usageMessage(() => parseDuration("--lease", text))).toMatch(
      /^--lease must be (a duration such as 300s, 5m, 1h, 1h30m, 250ms or a plain number of milliseconds \(300000\)|above 0 and at most 10 years \(315360000000 ms\)), got ".*"$/,
    );
  });

  it("junk: one line naming the option and quoting what it got", () => {
    expect(usageMessage(() => parseDuration("--lease", "soon"))).toBe(
      '--lease must be a duration such as 300s, 5m, 1h, 1h30m, 250ms or a plain number of milliseconds (300000), got "soon"',
    );
  });

  it("any text: whole ms in [1, 10 years], or a UsageError", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.stringMatching(/^(\d{1,4}(ms|s|m|h|d)){1,4}$/),
          fc.stringMatching(/^\d{1,13}$/),
        ),
        (text) => {
          try {
            const ms = parseDuration("--ttl", text);
            expect(Number.isSafeInteger(ms) && ms >= 1 && ms <= MAX_TTL_MS).toBe(true);
          } catch (error) {
            expect(error).toBeInstanceOf(UsageError);
            expect((error as Error).message).toMatch(/^--ttl must be .+, got "/);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it("text with anything but digits and units around it is refused, whatever the duration inside", () => {
    const junk = fc.constantFrom(" ", "\t", "-", "+", ".", ",", "x", "µs", "\n", "_");
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: MAX_TTL_MS }),
        junk,
        fc.boolean(),
        (ms, bad, before) => {
          const text = before ? `${bad}${formatDuration(ms)}` : `${formatDuration(ms)}${bad}`;
          expect(() => parseDuration("--lease", text)).toThrow(UsageError);
        },
      ),
    );
  });

  it("round trips: formatDuration's text and the plain number each read back to the same ms", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_TTL_MS }), (ms) => {
        expect(parseDuration("--lease", formatDuration(ms))).toBe(ms);
        expect(parseDuration("--lease", String(ms))).toBe(ms);
      }),
      { numRuns: 2_000 },
    );
    expect([900_000, 5_400_000, 300_250, 250].map(formatDuration)).toEqual([
      "15m",
      "1h30m",
      "5m250ms",
      "250ms",
    ]);
  });

  it("sums the parts it is given", () => {
    const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
    const part = fc.tuple(
      fc.integer({ min: 0, max: 999 }),
      fc.constantFrom("ms", "s", "m", "h", "d"),
    );
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 4 }), (parts) => {
        const expected = parts.reduce((sum, [n, u]) => sum + n * unit[u], 0);
        fc.pre(expected > 0);
        expect(parseDuration("--ttl", parts.map(([n, u]) => `${n}${u}`).join(""))).toBe(expected);
      }),
    );
  });
});

describe("parseStoreUrl", () => {
  it.each<[string, object]>([
    ["redis://127.0.0.1:6379", { kind: "redis" }],
    ["rediss://user:pw@cache.internal:6380/2", { kind: "redis" }],
    ["postgres://u@127.0.0.1/db", { kind: "postgres" }],
    ["postgresql:///db?host=/var/run/postgresql", { kind: "postgres" }],
    ["mysql://root@127.0.0.1:3306/app", { kind: "mysql" }],
    ["sqlite:./records.db", { kind: "sqlite", path: "./records.db" }],
    ["sqlite:/var/lib/app/records.db", { kind: "sqlite", path: "/var/lib/app/records.db" }],
    ["datastore:", { kind: "datastore", namespace: undefined }],
    ["datastore:orders-svc", { kind: "datastore", namespace: "orders-svc" }],
    ["firestore:", { kind: "firestore", collection: undefined }],
    ["FIRESTORE:idem", { kind: "firestore", collection: "idem" }],
    [
      "spanner:projects/p-1/instances/main/databases/orders",
      { kind: "spanner", projectId: "p-1", instanceId: "main", databaseId: "orders" },
    ],
    [
      "spanner:instances/main/databases/orders",
      { kind: "spanner", projectId: undefined, instanceId: "main", databaseId: "orders" },
    ],
  ])("%s", (text, expected) => {
    expect(parseStoreUrl(text)).toMatchObject(expected);
  });

  it.each<[string, RegExp]>([
    ["memcached://h", /unsupported backend URL "memcached:\/\/h": use redis:\/\//],
    ["redis", /unsupported backend URL/],
    ["redis://", /does not parse|has no host/],
    ["redis://h/orders", /path can only be a database number/],
    ["redis://h/0?tls=1", /takes no query/],
    ["mysql:///app", /has no host/],
    ["postgres://", /does not parse|has no host/],
    ["sqlite:", /sqlite: needs a path/],
    ["spanner:", /spanner: needs a database/],
    ["spanner:instances/main", /spanner: needs a database/],
    ["spanner:projects/p/instances/i/databases/d/x", /spanner: needs a database/],
  ])("refuses %s", (text, message) => {
    expect(usageMessage(() => parseStoreUrl(text))).toMatch(message);
  });

  it("never shows a password", () => {
    expect(redact("redis://user:s3cret@h:1/0")).toBe("redis://user:***@h:1/0");
    expect(usageMessage(() => parseStoreUrl("redis://u:s3cret@h/x"))).not.toContain("s3cret");
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9]{6,12}$/), fc.string(), (password, tail) => {
        const text = `memcached://user:${password}@host/${tail}`;
        expect(usageMessage(() => parseStoreUrl(text))).not.toContain(password);
      }),
    );
  });

  it("any text: a store spec or a UsageError", () => {
    const scheme = fc.constantFrom(
      "redis:",
      "rediss:",
      "postgres:",
      "mysql:",
      "sqlite:",
      "datastore:",
      "firestore:",
      "",
      "x:",
    );
    fc.assert(
      fc.property(scheme, fc.oneof(fc.string(), fc.webUrl()), (prefix, rest) => {
        try {
          expect(typeof parseStoreUrl(`${prefix}${rest}`).kind).toBe("string");
        } catch (error) {
          expect(error).toBeInstanceOf(UsageError);
        }
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("runCli: every refusal before any I/O", () => {
  it.each<[string, string[], RegExp]>([
    ["no command", [], /^$/],
    [
      "an unknown command",
      ["inspekt"],
      /unknown command "inspekt": use inspect, release, purge, doctor/,
    ],
    [
      "no backend",
      ["inspect", "k"],
      /no backend: pass --backend URL or set GCP_PUBSUB_IDEMPOTENCY_BACKEND/,
    ],
    ["a bad URL", ["inspect", "--backend", "ftp://h", "k"], /unsupported backend URL "ftp:\/\/h"/],
    [
      "an option of another backend",
      ["inspect", "--backend", "redis://h", "--table", "t", "k"],
      /--table applies to postgres, mysql, sqlite, spanner backends only, not redis/,
    ],
    ["a key with NUL", ["inspect", "--backend", "redis://h", "a\0"], /argument 3 contains a NUL/],
    [
      "a key with a lone surrogate",
      ["inspect", "--backend", "redis://h", "a\uD800"],
      /well-formed Unicode/,
    ],
    [
      "a key of 1,025 bytes",
      ["inspect", "--backend", "redis://h", "k".repeat(1025)],
      /at most 1024 UTF-8 bytes, got 1025/,
    ],
    ["an empty key", ["inspect", "--backend", "redis://h", ""], /must not be empty/],
    [
      "release without a terminal or --yes",
      ["release", "--backend", "redis://h", "k"],
      /stdin is no terminal: pass --yes/,
    ],
    ["release with two keys", ["release", "--yes", "a", "b"], /at most 1 KEY, got 2/],
    ["a bad --ttl", ["release", "--yes", "--ttl", "1.5h", "k"], /--ttl must be a duration/],
    [
      "purge with an argument",
      ["purge", "--backend", "redis://h", "all"],
      /purge takes no arguments, got "all"/,
    ],
    ["doctor without --subscription", ["doctor"], /doctor needs --subscription/],
    [
      "doctor with a short name and no --project",
      ["doctor", "--subscription", "orders"],
      /^gcp-pubsub-idempotency: --subscription "orders" is a short name and no project is given: pass --project P \(doctor then reads projects\/P\/subscriptions\/orders\), or the full name --subscription projects\/P\/subscriptions\/orders\n$/,
    ],
    [
      "doctor with a bad name",
      ["doctor", "--project", "p", "--subscription", "a/b"],
      /--subscription must be projects\/P\/subscriptions\/S or a subscription id S .+, got "a\/b"/,
    ],
    [
      "doctor with a bad --project",
      ["doctor", "--project", "My Project", "--subscription", "orders"],
      /--project must be a project id .+, got "My Project"/,
    ],
    [
      "doctor with a full name in another project than --project",
      ["doctor", "--project", "q", "--subscription", "projects/p/subscriptions/orders"],
      /is in project "p", but --project says "q": drop one/,
    ],
    [
      "doctor with a bad --lease",
      ["doctor", "--subscription", "projects/p/subscriptions/sub", "--lease", "soon"],
      /--lease must be a duration/,
    ],
  ])("%s → exit 2 and one line naming it", async (_, argv, message) => {
    const { io, cli } = fakeTerminal();
    expect(await runCli(argv, cli)).toBe(2);
    if (argv.length === 0) {
      expect(io.out).toMatch(/^Usage: gcp-pubsub-idempotency <command>/);
      return;
    }
    expect(io.err).toMatch(/^gcp-pubsub-idempotency: .+\n$/);
    expect(io.err.split("\n")).toHaveLength(2);
    expect(io.err).toMatch(message);
  });

  it("--json: the refusal as one JSON document on stdout too", async () => {
    const { io, cli } = fakeTerminal();
    expect(await runCli(["inspect", "--json", "--backend", "ftp://h", "k"], cli)).toBe(2);
    expect(JSON.parse(io.out)).toEqual({
      error: { message: expect.stringMatching(/^unsupported backend URL/), exitCode: 2 },
    });
  });

  it("--help anywhere before -- answers the command's help, exit 0", async () => {
    for (const name of ["inspect", "release", "purge", "doctor"]) {
      const { io, cli } = fakeTerminal();
      expect(await runCli([name, "--bogus", "-h"], cli)).toBe(0);
      expect(io.out).toMatch(new RegExp(`^Usage: gcp-pubsub-idempotency ${name} \\[options\\]`));
      expect(io.out).toContain("--json");
    }
  });

  it("any command line without a backend: help (0) or a usage error (2), never I/O", async () => {
    const command = fc.constantFrom("inspect", "release", "purge");
    const arg = fc.oneof(
      fc.string(),
      fc.constantFrom(
        "--json",
        "--yes",
        "--prefix",
        "--table=t",
        "--ttl",
        "1h",
        "--",
        "-h",
        "\0",
        "é".repeat(400),
      ),
    );
    await fc.assert(
      fc.asyncProperty(command, fc.array(arg, { maxLength: 6 }), async (name, args) => {
        const { io, cli } = fakeTerminal();
        const code = await runCli([name, ...args], cli);
        expect([0, 2]).toContain(code);
        if (code === 2) expect(io.err).toMatch(/^gcp-pubsub-idempotency: [^\n]+\n$/);
      }),
      { numRuns: 1_000 },
    );
  });
});
