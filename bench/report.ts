/** BENCHMARKS.md from one run's results: the targets first, then every table. */
import type { GatewayResult, SurfacePathResult } from "./gateway.js";
import { type OnceRun, onceSection, onceTarget } from "./once-report.js";
import { type Provenance, provenanceLine } from "./provenance.js";
import { rpcCountsMarkdown, type StoreCounts, type StoreName } from "./rpc-counts.js";
import {
  fmtMs,
  fmtRate,
  halfWidth,
  pairedRatios,
  type Result,
  type Settings,
  type Spread,
  spread,
} from "./runner.js";
import { SCALE_CONCURRENCY, type ScaleResult } from "./scale.js";
import { type BackendResult, cellKey, PATH_TITLE, PATHS, type Path } from "./suite.js";
import type { TelemetryResult } from "./telemetry.js";
import type { TransactionRatio } from "./transaction.js";

export interface RunResult {
  settings: Settings;
  command: string;
  /** The commit and work-tree state the run measured, read when it started. */
  provenance: Provenance;
  date: string;
  machine: string;
  node: string;
  loadAtStart: string;
  loadAtEnd: string;
  seconds: number;
  backends: BackendResult[];
  scales: ScaleResult[];
  scaleErrors: string[];
  gateway?: GatewayResult;
  telemetry?: TelemetryResult;
  /** lockInTransaction ÷ lock() + its own transaction, per SQL dialect and concurrency. */
  transaction?: TransactionRatio[];
  /** once() duplicates against lock() duplicates, per store and in-flight count. */
  once?: OnceRun;
  /** gRPC calls of each path on the Datastore, Firestore and Spanner emulators. */
  rpc?: Record<StoreName, StoreCounts>;
  charts: { throughput?: string; scale?: string };
  /** With --repeat N: every pass, this run being the last. */
  repeats?: RunResult[];
}

export interface Target {
  what: string;
  measured: string;
  met: boolean | undefined;
  /** Where it is not met: the measured cause and what would be needed. */
  cause?: string;
  /** The spread of a ratio straddles the target: not called met, not called missed. */
  straddles?: boolean;
}

const ratio = (n: number) => `${n.toFixed(2)}×`;
export const verdict = (t: Target) =>
  t.met === undefined
    ? t.straddles
      ? "spread straddles it"
      : "not measured"
    : t.met
      ? "met"
      : "**not met**";

/** median [min–max] of a ratio over rounds. */
export function fmtSpread(s: Spread): string {
  return s.min === s.max
    ? ratio(s.median)
    : `${ratio(s.median)} [${s.min.toFixed(2)}–${s.max.toFixed(2)}]`;
}

function cell(b: BackendResult | undefined, path: Path, c: number, name: string) {
  return b?.cells.get(cellKey(path, c, name));
}

type Metric = "ops" | "clientCpu" | "serverCpu" | "totalCpu";
const series = (r: Result, metric: Metric): number[] | undefined => {
  if (metric === "ops") return r.rounds;
  if (metric === "clientCpu") return r.clientCpu;
  if (metric === "serverCpu") return r.serverCpu;
  // Client plus server, round by round: only where the server's was measured.
  const server = r.serverCpu;
  return server && r.clientCpu.map((client, k) => client + (server[k] ?? Number.NaN));
};

/** `a ÷ b` of one metric, round by round, at one path and concurrency. */
export function cellRatio(
  b: BackendResult | undefined,
  path: Path,
  c: number,
  a: string,
  other: string,
  metric: Metric = "ops",
): Spread | undefined {
  const x = cell(b, path, c, a);
  const y = cell(b, path, c, other);
  if (x === undefined || y === undefined) return undefined;
  const xs = series(x, metric);
  const ys = series(y, metric);
  return xs && ys ? spread(pairedRatios(xs, ys)) : undefined;
}

/** The verdict of a target: met, missed, or (undefined) neither. */
export interface Judgement {
  met: boolean | undefined;
  /** Every part was measured and none missed, but some spread straddles the bound. */
  straddles?: boolean;
}

/**
 * The one rule every target of the table is judged by, over several parts (each a spread
 * over rounds, repeats or passes): met when every part's whole spread, min and max, is on
 * the right side of the bound; missed when some part's whole spread is on the wrong side;
 * otherwise neither: a spread that straddles the bound proves nothing either way, and a
 * median alone is never enough. A part not measured keeps the target from being met.
 */
export function judge(
  parts: ReadonlyArray<Spread | undefined>,
  bound: number,
  direction: "atLeast" | "atMost",
): Judgement {
  const known = parts.filter((p): p is Spread => p !== undefined);
  if (known.length === 0) return { met: undefined };
  const good = (x: number) => (direction === "atLeast" ? x >= bound : x <= bound);
  if (known.some((s) => !good(s.min) && !good(s.max))) return { met: false };
  if (known.length === parts.length && known.every((s) => good(s.min) && good(s.max))) {
    return { met: true };
  }
  return known.length === parts.length ? { met: undefined, straddles: true } : { met: undefined };
}

/** Several judgements that must all hold: met when all are, missed when any is. */
export function judgeAll(judgements: readonly Judgement[]): Judgement {
  if (judgements.some((j) => j.met === false)) return { met: false };
  if (judgements.length > 0 && judgements.every((j) => j.met === true)) return { met: true };
  return judgements.length > 0 && judgements.every((j) => j.met === true || j.straddles)
    ? { met: undefined, straddles: true }
    : { met: undefined };
}

/** A target over (label, spread) parts, judged by {@link judge}. */
export function spreadTarget(
  what: string,
  parts: ReadonlyArray<readonly [string, Spread | undefined]>,
  bound: number,
  direction: "atLeast" | "atMost",
  format: (s: Spread) => string = fmtSpread,
): Target {
  const known = parts.filter((p): p is readonly [string, Spread] => p[1] !== undefined);
  if (known.length === 0) return { what, measured: "—", met: undefined };
  const measured = known.map(([label, s]) => `${label} ${format(s)}`).join(", ");
  return {
    what,
    measured,
    ...judge(
      parts.map(([, s]) => s),
      bound,
      direction,
    ),
  };
}

/** A spread of `a ÷ b` from two series measured round by round. */
const roundRatio = (a: readonly number[] | undefined, b: readonly number[] | undefined) =>
  a && b ? spread(pairedRatios(a, b)) : undefined;

/** µs with enough digits for sub-microsecond figures. */
export const fmtFineUs = (n: number) =>
  Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(1) : n.toFixed(2);

/**
 * The cause of a surface target not met, every figure from this run: CPU per delivery of
 * each surface, the difference between them, the cost of the environment check every
 * delivery makes, and what "within 3× of a bare claim" leaves.
 */
export function surfaceCause(name: string, r: SurfacePathResult, disabledCheckUs: number): string {
  const httpUs = 1e6 / r.httpPerCpuSecond;
  const messageUs = 1e6 / r.messagePerCpuSecond;
  const claimUs = 1e6 / r.memoryClaim;
  const beyond = httpUs - messageUs;
  return [
    `Measured in this run, CPU per ${name} delivery: idempotentHttp ${fmtFineUs(httpUs)} µs, idempotentMessage ${fmtFineUs(messageUs)} µs; InMemoryLock's claim ${fmtFineUs(claimUs)} µs (from its rate, one call after another); the \`GCP_PUBSUB_IDEMPOTENCY_DISABLED\` check every delivery makes (\`gatewayDisabled()\`, a \`process.env\` read at call time by design) ${fmtFineUs(disabledCheckUs)} µs.`,
    `idempotentHttp still checks every field of a push before the claim, so that a malformed copy of a completed key is refused 400 rather than acked (the request headers read for the format, the base64 alphabet scanned, publishTime matched, the attributes' types), but decodes the data and makes the message only when the handler runs: ${beyond >= 0 ? `${fmtFineUs(beyond)} µs more` : `${fmtFineUs(-beyond)} µs less`} than a pull message here.`,
    `Within 3× of that claim allows ${fmtFineUs(3 * claimUs)} µs per delivery in all, the claim's own ${fmtFineUs(claimUs)} µs included, against idempotentMessage's ${fmtFineUs(messageUs)} µs.`,
    "What both surfaces share is most of the rest: the environment check above and the delivery's async frames (the surface's, the delivery's, the claim cycle's) around the claim's own; the 3× bound would need a surface with no await beyond the claim's.",
  ].join(" ");
}

/** A ratio's spread as the overhead it means: 1 − ratio, signed, in per cent. */
export function fmtOverhead(s: Spread): string {
  const pct = (ratio: number) => {
    const lost = (1 - ratio) * 100;
    return `${lost >= 0 ? "+" : "−"}${Math.abs(lost).toFixed(1)} %`;
  };
  return s.min === s.max ? pct(s.median) : `${pct(s.median)} [${pct(s.max)} … ${pct(s.min)}]`;
}

/** CPU µs per operation of `a` and of `other` on each path, client and (where measured) server. */
function cpuSides(
  b: BackendResult | undefined,
  a: string,
  other: string,
  c: number,
  paths: readonly Path[] = PATHS,
): string {
  const median = (r: Result | undefined, metric: Metric) => {
    const values = r && series(r, metric);
    return values && spread(values)?.median;
  };
  const parts: string[] = [];
  for (const path of paths) {
    const x = cell(b, path, c, a);
    const y = cell(b, path, c, other);
    const client = [median(x, "clientCpu"), median(y, "clientCpu")];
    const server = [median(x, "serverCpu"), median(y, "serverCpu")];
    const pair = ([p, q]: Array<number | undefined>) =>
      p === undefined || q === undefined ? undefined : `${fmtUs(p)} vs ${fmtUs(q)}`;
    const texts = [
      pair(client) && `client ${pair(client)}`,
      pair(server) && `server ${pair(server)}`,
    ].filter(Boolean);
    if (texts.length > 0) parts.push(`${path} ${texts.join(", ")}`);
  }
  return parts.length === 0 ? "" : `CPU µs/op, ${a} vs ${other}: ${parts.join("; ")}.`;
}

/** Attach the cause of a target that is not met: measured figures, then what would be needed. */
function withCause(target: Target, measured: string, needed: string): Target {
  // A target not measured has no cause to give: nothing of it ran.
  return target.met === true || target.measured === "—"
    ? target
    : { ...target, cause: `${measured} ${needed}`.trim() };
}

/** The Redis clients ours and the floor both run on, each judged against its own floor. */
const REDIS_CLIENTS = ["ioredis", "@redis", "glide"] as const;

const REDIS_FLOOR_CAUSE =
  "Server side, the floor's claim writes the same five hash fields as ours, `token` included (a fixed 11-character string where ours sends a random 36-character UUID, generated client-side), and the same PEXPIREAT; what ours adds is deciding the transition: one HMGET of seven fields where the floor's reads four (the fingerprint, result and token that a duplicate, a held key and a retried claim answer from) and the fence and expiry guards of complete and release. Each script carries only the prelude helpers it calls, reads TIME once and formats no number; no run checks `replicate_commands` (a server that needs it refuses the first write, and gets the script's legacy text from then on). What is left on the server is those reads and guards, well inside this target's spread on shared cores; the client side beyond the floor is `lock()`'s own work (options, the key check, the claim token, the answer) on top of the same script call.";

/** The same scripts on another client: the server side in short, as ioredis's row may be met. */
const REDIS_FLOOR_CAUSE_AGAIN =
  "The same scripts and the same floor as on ioredis: on the server, ours adds deciding the transition (a wider HMGET, the fence and expiry guards); the client side beyond the floor is `lock()`'s own work on top of the same script call.";

/** Why a first delivery of ours and of Powertools differ: both rows on it give this. */
const POWERTOOLS_FIRST_CAUSE =
  "Both make two round trips on a first delivery (a claim, then the record of its completion) on the same client, so what is left between them is CPU per operation, client and server, shared by both on the same two cores.";

/**
 * A first delivery never behind Powertools on the same client (node-redis): ops/s at least
 * level, and less CPU per operation, client plus server, round by round.
 */
function poweredTarget(redis: BackendResult | undefined, at: number): Target {
  const what =
    "Redis, ours/@redis first delivery never behind Powertools: ops/s ≥ 1.0× and CPU per operation, client plus server, ≤ 1.0× (16 in flight)";
  const ops = cellRatio(redis, "first", at, "ours/@redis", "powertools/@redis", "ops");
  const cpu = cellRatio(redis, "first", at, "ours/@redis", "powertools/@redis", "totalCpu");
  if (ops === undefined && cpu === undefined) return { what, measured: "—", met: undefined };
  const measured = [ops && `ops/s ${fmtSpread(ops)}`, cpu && `CPU ${fmtSpread(cpu)}`]
    .filter(Boolean)
    .join(", ");
  return withCause(
    {
      what,
      measured,
      ...judgeAll([judge([ops], 1, "atLeast"), judge([cpu], 1, "atMost")]),
    },
    cpuSides(redis, "ours/@redis", "powertools/@redis", at, ["first"]),
    POWERTOOLS_FIRST_CAUSE,
  );
}

/** The targets of BENCHMARKS.md's table; each ratio median [min–max] over the rounds. */
export function targets(run: RunResult): Target[] {
  const by = (id: string) => run.backends.find((b) => b.id === id && b.cells.size > 0);
  const memory = by("memory");
  const redis = by("redis");
  const pgb = by("postgres");
  const at = 16;
  const perPath = (
    b: BackendResult | undefined,
    a: string,
    other: string,
    metric: Metric,
    paths: readonly Path[] = PATHS,
  ) => paths.map((path) => [path, cellRatio(b, path, at, a, other, metric)] as const);
  const out: Target[] = [];
  const g = run.gateway;
  for (const [name, r] of g
    ? ([
        ["duplicate", g.duplicate],
        ["held", g.held],
      ] as const)
    : []) {
    // "On one core": deliveries per CPU-second of the process, which load does not inflate.
    // Round by round (the surfaces and the claim took turns inside each round): the slowest
    // surface's rate, and the bare claim's rate over it, each judged over its whole spread.
    const http = r.perRound.httpPerCpuSecond;
    const message = r.perRound.messagePerCpuSecond;
    const slowestRounds = http.map((h, k) => Math.min(h, message[k] ?? h));
    const slowest = spread(slowestRounds);
    const within = roundRatio(r.perRound.memoryClaim, slowestRounds);
    const fmtRates = (s: Spread) =>
      s.min === s.max
        ? fmtRate(s.median)
        : `${fmtRate(s.median)} [${fmtRate(s.min)}–${fmtRate(s.max)}]`;
    out.push(
      withCause(
        {
          what: `Surfaces over an instant backend, ${name}: ≥ 1,000,000 deliveries/s on one core, within 3× of a bare claim (InMemoryLock's)`,
          measured: `per CPU-second (median): idempotentHttp ${fmtRate(r.httpPerCpuSecond)}, idempotentMessage ${fmtRate(r.messagePerCpuSecond)}; slowest per round ${slowest ? fmtRates(slowest) : "—"}; bare claim ÷ slowest ${within ? fmtSpread(within) : "—"}`,
          ...judgeAll([judge([slowest], 1_000_000, "atLeast"), judge([within], 3, "atMost")]),
        },
        surfaceCause(name, r, g!.disabledCheckUs),
        "",
      ),
    );
  }
  out.push(
    withCause(
      spreadTarget(
        "InMemoryLock, every path within 1.5× of its floor (floor ÷ ours, ops/s, 16 in flight)",
        perPath(memory, "floor", "ours", "ops"),
        1.5,
        "atMost",
      ),
      cpuSides(memory, "ours", "floor", at),
      "The floor is one awaited Map operation per round trip; ours is `lock()`, which checks its options on every call (the caller may change the object between calls) and rejects a duplicate or a held key with an error (no stack, but an allocation and a rejected promise). Needed: options resolved once per options object, which `lock()`'s contract does not allow; the surfaces resolve once and do not pay it.",
    ),
    withCause(
      spreadTarget(
        "Redis standalone, ours/ioredis client CPU per operation within 1.2× of the floor's, every path (16 in flight)",
        perPath(redis, "ours/ioredis", "floor/ioredis", "clientCpu"),
        1.2,
        "atMost",
      ),
      cpuSides(redis, "ours/ioredis", "floor/ioredis", at),
      "The client side beyond the floor is `lock()`'s own work (options, the key check, the claim token, the answer) on top of the same EVALSHA.",
    ),
    ...REDIS_CLIENTS.map((client) =>
      withCause(
        spreadTarget(
          `Redis standalone, ours/${client} ops/s ≥ 0.85× the floor on the same client, every path (16 in flight)`,
          perPath(redis, `ours/${client}`, `floor/${client}`, "ops"),
          0.85,
          "atLeast",
        ),
        cpuSides(redis, `ours/${client}`, `floor/${client}`, at),
        client === REDIS_CLIENTS[0] ? REDIS_FLOOR_CAUSE : REDIS_FLOOR_CAUSE_AGAIN,
      ),
    ),
    poweredTarget(redis, at),
    withCause(
      spreadTarget(
        "Redis, ours/@redis first delivery ≥ 1.25× Powertools (16 in flight)",
        perPath(redis, "ours/@redis", "powertools/@redis", "ops", ["first"]),
        1.25,
        "atLeast",
      ),
      cpuSides(redis, "ours/@redis", "powertools/@redis", at, ["first"]),
      POWERTOOLS_FIRST_CAUSE,
    ),
    withCause(
      spreadTarget(
        "Redis, ours/@redis duplicate ≥ 2× Powertools (16 in flight)",
        perPath(redis, "ours/@redis", "powertools/@redis", "ops", ["duplicate"]),
        2,
        "atLeast",
      ),
      cpuSides(redis, "ours/@redis", "powertools/@redis", at, ["duplicate"]),
      "A duplicate is one script call here; in Powertools a SET … NX that is refused, then a GET. On loopback the ratio follows each one's CPU per operation, client plus server, more than their round trips.",
    ),
    withCause(
      spreadTarget(
        "PostgreSQL, every path ≥ 0.85× the floor (16 in flight)",
        perPath(pgb, "ours", "floor", "ops"),
        0.85,
        "atLeast",
      ),
      cpuSides(pgb, "ours", "floor", at),
      "Both claims are one statement that reads the record and, on a duplicate or a held key, writes nothing; ours also computes liveness from the server's clock, and its INSERT carries the DO UPDATE … WHERE arm of a reclaim, which the executor sets up on every run, even when the read alone answers (a measurement of the two statements alone, outside this run, is cited in docs/benchmarks/cited.md). The client side beyond the floor is `lock()`'s own work and SqlLock's (the key check, the claim token, the row read back as an outcome) on top of the same one round trip. A mutex cycle commits two writes in both: ours a reclaim (the claim statement, with its read and its guard) and a release, the floor a plain upsert and an UPDATE that releases; neither side's updates are HOT, since both rewrite `expires_at`, which the purge index covers. Needed: a claim whose answer from the read sets up no INSERT, which one statement cannot do, and less work per `lock()` call.",
    ),
    withCause(
      spreadTarget(
        "PostgreSQL, duplicate and contention ≥ 3× the row-lock design (16 in flight)",
        perPath(pgb, "ours", "row-lock", "ops", ["duplicate", "contention"]),
        3,
        "atLeast",
      ),
      cpuSides(pgb, "ours", "row-lock", at, ["duplicate", "contention"]),
      "The row-lock design answers a duplicate or a held key with three statements on one checked-out connection (BEGIN, SELECT … FOR UPDATE, COMMIT) where ours sends one that writes nothing; on loopback a round trip costs little beyond the CPU of its statement, so the ratio follows CPU per operation, client plus server, which ours' one statement (a CTE that reads the record and carries the INSERT's reclaim arm) does not cut to a third. Over a network, where each round trip adds its latency, the ratio of round trips (3 to 1) is what a user sees.",
    ),
  );
  const inTransaction = run.transaction?.filter((r) => r.inFlight === at) ?? [];
  out.push(
    inTransaction.length === 0
      ? {
          what: "lockInTransaction ≥ 1.0× lock() + its own transaction, every SQL dialect (16 in flight)",
          measured: "—",
          met: undefined,
        }
      : spreadTarget(
          "lockInTransaction ≥ 1.0× lock() + its own transaction, every SQL dialect (16 in flight)",
          inTransaction.map((r) => [r.dialect, r.ratio] as const),
          1,
          "atLeast",
        ),
  );
  out.push(onceTarget(run.once));
  // Every ratio above that has a spread: how far its rounds stray from their median.
  const widths: Array<[string, number]> = [];
  for (const b of run.backends) {
    for (const ours of b.contenders.filter((c) => c.role === "ours" && c.floor !== undefined)) {
      for (const path of PATHS) {
        const a = cell(b, path, at, ours.name);
        const r = cellRatio(b, path, at, ours.name, ours.floor!, "ops");
        // One round has no spread to speak of: it is not evidence that the ratio holds still.
        if (r && a && a.rounds.length > 1)
          widths.push([`${b.id} ${ours.name} ${path}`, halfWidth(r)]);
      }
    }
  }
  const worst = widths.sort((x, y) => y[1] - x[1]).slice(0, 3);
  out.push({
    what: "Spread of each ours ÷ floor ratio over rounds within ±10 % (quiet machine)",
    measured:
      worst.length === 0
        ? "—"
        : `widest: ${worst.map(([n, w]) => `${n} ±${(w * 100).toFixed(0)} %`).join(", ")}`,
    met: worst.length === 0 ? undefined : worst[0]![1] <= 0.1,
    ...(worst.length > 0 && worst[0]![1] > 0.1
      ? {
          cause: `The machine's load average was ${run.loadAtStart} at the start and ${run.loadAtEnd} at the end (1, 5, 15 minutes) on ${run.machine}, whose cores the client, the server and everything else running share: a round in which another process takes a core for a moment moves one contender's cell and not the other's. Needed: a quiet machine with a core for the client and one for the server, or more rounds.`,
        }
      : {}),
  });
  // Telemetry on ÷ off, round by round (the variants took turns inside each round): ≤ 5 %
  // overhead is a ratio ≥ 0.95 over the whole spread, as for every other target.
  const t = run.telemetry;
  out.push(
    spreadTarget(
      "Telemetry: ≤ 5 % gateway overhead with `@opentelemetry/api` and no SDK (push, lock(); overhead per round, median [min … max])",
      [
        ["push", roundRatio(t?.pushRounds.noSdk, t?.pushRounds.off)],
        ["lock()", roundRatio(t?.lockRounds.noSdk, t?.lockRounds.off)],
      ],
      0.95,
      "atLeast",
      fmtOverhead,
    ),
  );
  // The largest size ÷ the smallest, round by round (the sizes took turns inside each round).
  for (const id of ["redis", "postgres"]) {
    const sc = run.scales.find((x) => x.id === id);
    const first = sc?.results[0];
    const last = sc?.results.at(-1);
    const from = sc ? compactCount(sc.sizes[0]!) : "1k";
    const to = sc ? compactCount(sc.sizes.at(-1)!) : "1M";
    const target = spreadTarget(
      `Scale, ${id}: ≤ 10 % loss from ${from} to ${to} keys (${to} ÷ ${from}, ops/s per round)`,
      [[`${to} ÷ ${from}`, roundRatio(last?.rounds, first?.rounds)]],
      0.9,
      "atLeast",
    );
    out.push(
      first && last && target.measured !== "—"
        ? {
            ...target,
            measured: `${target.measured} (${fmtRate(first.opsPerSec)} → ${fmtRate(last.opsPerSec)} ops/s)`,
          }
        : target,
    );
  }
  return out;
}

/**
 * --repeat N: each pass's median ours ÷ floor at 16 in flight, and whether the passes agree
 * within ±10 % of their common median; then each target's verdict pass by pass.
 */
function repeatSection(runs: readonly RunResult[]): string[] {
  const lines = [
    `## Repeats: ${runs.length} passes`,
    "",
    `Load average (1/5/15 min) of each pass, at its start → at its end: ${runs.map((r, k) => `pass ${k + 1}: ${r.loadAtStart} → ${r.loadAtEnd} (${r.seconds.toFixed(0)} s)`).join("; ")}.`,
    "",
    "| backend | system | path | median ours ÷ floor per pass | across passes | agree ±10 % |",
    "|---|---|---|---|---|---|",
  ];
  const last = runs.at(-1)!;
  for (const b of last.backends) {
    for (const ours of b.contenders.filter((c) => c.role === "ours" && c.floor !== undefined)) {
      for (const path of PATHS) {
        const medians = runs.map(
          (r) =>
            cellRatio(
              r.backends.find((x) => x.id === b.id),
              path,
              16,
              ours.name,
              ours.floor!,
            )?.median,
        );
        const known = medians.filter((m): m is number => m !== undefined);
        const across = spread(known);
        if (!across) continue;
        lines.push(
          `| ${b.id} | ${ours.name} | ${path} | ${medians.map((m) => (m === undefined ? "—" : ratio(m))).join(", ")} | ${fmtSpread(across)} | ${halfWidth(across) <= 0.1 ? "yes" : "**no**"} |`,
        );
      }
    }
  }
  lines.push("", "| target | verdict per pass |", "|---|---|");
  const perPass = runs.map((r) => targets(r));
  perPass[0]!.forEach((t, k) => {
    lines.push(`| ${t.what} | ${perPass.map((p) => (p[k] ? verdict(p[k]) : "—")).join(" · ")} |`);
  });
  lines.push("");
  return lines;
}

const fmtUs = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));

function compactCount(n: number): string {
  return n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n);
}

function backendSection(b: BackendResult, concurrency: readonly number[]): string[] {
  const lines = [`### ${b.title}`, ""];
  lines.push(`${b.versions}  `, `Floor: ${b.floorNote}.  `);
  lines.push(`Load average at start: ${b.loadAtStart}; took ${b.seconds.toFixed(0)} s.`, "");
  if (b.error) lines.push(`**Failed:** ${b.error}`, "");
  if (b.cells.size === 0) return lines;
  const oursFor = (floor: string | undefined) =>
    b.contenders.find((c) => c.role === "ours" && c.floor === floor) ??
    b.contenders.find((c) => c.role === "ours");
  lines.push(
    "| path | in flight | system | ops/s | p50 ms | p99 ms | client CPU µs/op | server CPU µs/op | ÷ floor | ours ÷ it |",
    "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const path of PATHS) {
    for (const c of concurrency) {
      for (const who of b.contenders) {
        const r: Result | undefined = b.cells.get(cellKey(path, c, who.name));
        if (r === undefined) continue;
        const vsFloor =
          who.floor === undefined ? undefined : cellRatio(b, path, c, who.name, who.floor);
        let oursOverIt = "";
        if (who.role === "peer" || who.role === "design") {
          const ours = oursFor(who.floor);
          const o = ours && cellRatio(b, path, c, ours.name, who.name);
          if (ours && o) oursOverIt = `${fmtSpread(o)} (${ours.name})`;
        }
        const clientCpu = spread(r.clientCpu);
        const serverCpu = r.serverCpu && spread(r.serverCpu);
        lines.push(
          `| ${path} | ${c} | ${who.name} | ${fmtRate(r.opsPerSec)} | ${fmtMs(r.p50)} | ${fmtMs(r.p99)} | ${clientCpu ? fmtUs(clientCpu.median) : ""} | ${serverCpu ? fmtUs(serverCpu.median) : ""} | ${vsFloor ? fmtSpread(vsFloor) : ""} | ${oursOverIt} |`,
        );
      }
    }
  }
  lines.push("");
  return lines;
}

export function renderMarkdown(run: RunResult): string {
  const s = run.settings;
  const lines = [
    "# Benchmarks",
    "",
    `Written by \`${run.command}\` — do not edit by hand; rerun it.`,
    "",
    provenanceLine(run.provenance),
    "",
    `- Date: ${run.date} (${s.size} size, ${run.seconds.toFixed(0)} s in all${run.repeats ? `, ${run.repeats.length} passes; the tables below are the last pass's` : ""})`,
    `- Machine: ${run.machine}`,
    `- Node ${run.node}; client, servers and emulators on the same machine (127.0.0.1)`,
    `- Load average (1/5/15 min): ${run.loadAtStart} at start, ${run.loadAtEnd} at the end. Other processes share these cores: compare within a run, not across runs.`,
    `- Each cell: ${s.rounds} round(s); in each round every system of the backend in turn (the order reversed every other round), ${s.warmupMs} ms warm-up then ${s.roundMs} ms timed, with the given number of operations in flight in one process. ops/s over all timed rounds; p50/p99 of every operation's latency.`,
    "- Every ratio is taken round by round (the two cells of a round ran back to back) and shown as the median with [min–max] over the rounds; a target is met only when the whole spread is on its side, and a spread that straddles it is called neither.",
    "- CPU µs/op: the client process's own CPU time (`process.cpuUsage`) and the server's (Redis `INFO cpu`; every `postgres` or `mariadbd` process from `/proc`) over each timed round, divided by the operations in it; the median over rounds. On shared cores CPU per operation holds still where ops/s does not.",
    `- Paths: ${PATHS.map((p) => `**${p}** = ${PATH_TITLE[p]}`).join("; ")}. Duplicates cycle over ${s.dupKeys.toLocaleString("en-US")} done keys.`,
    "- **floor** = the same number of round trips as the library makes on that path, raw, with the driver alone (per backend below); **row-lock** = the classic `BEGIN; SELECT … FOR UPDATE; INSERT or UPDATE; COMMIT` claim; peers are other libraries on the same server in the same run.",
    "",
    "## Targets",
    "",
    "| target | measured | |",
    "|---|---|---|",
    ...targets(run).map((t) => `| ${t.what} | ${t.measured} | ${verdict(t)} |`),
    "",
  ];
  const causes = targets(run).filter((t) => t.cause);
  if (causes.length > 0) {
    lines.push(
      "### Where a target is not met",
      "",
      ...causes.map((t) => `- **${t.what}.** ${t.cause}`),
      "",
      "Every figure above is this run's own. Measurements made outside it, which the run neither makes nor rewrites, are kept apart in `docs/benchmarks/cited.md` of the repository, each with its exact command and date.",
      "",
    );
  }
  if (run.charts.throughput) {
    lines.push(
      "## Throughput vs operations in flight",
      "",
      `![ops/s vs in flight per backend](${run.charts.throughput})`,
      "",
    );
  }
  if (run.repeats) lines.push(...repeatSection(run.repeats));
  lines.push("## Backends", "");
  for (const b of run.backends) lines.push(...backendSection(b, s.concurrency));
  lines.push("## Scale: keys already stored", "");
  if (run.charts.scale && run.scales.length > 0)
    lines.push(`![throughput vs stored keys](${run.charts.scale})`, "");
  if (run.scales.length > 0) {
    lines.push(
      `First delivery (lock() on a fresh key) at ${SCALE_CONCURRENCY} in flight, the sizes interleaved round by round (${s.rounds * 2} rounds).`,
      "",
      "| store | keys stored | ops/s | p50 ms | p99 ms | ÷ smallest | stored in |",
      "|---|--:|--:|--:|--:|--:|--:|",
    );
    for (const sc of run.scales) {
      const base = sc.results[0]?.opsPerSec ?? 0;
      sc.sizes.forEach((n, k) => {
        const r = sc.results[k];
        if (!r) return;
        lines.push(
          `| ${sc.title} | ${n.toLocaleString("en-US")} | ${fmtRate(r.opsPerSec)} | ${fmtMs(r.p50)} | ${fmtMs(r.p99)} | ${base > 0 ? ratio(r.opsPerSec / base) : ""} | ${sc.loadSeconds[k]?.toFixed(1)} s |`,
        );
      });
    }
    lines.push("");
    for (const sc of run.scales) lines.push(`- ${sc.title}: ${sc.note}.`);
    const mem = run.scales.find((x) => x.bytesPerRecord !== undefined);
    if (mem?.bytesPerRecord !== undefined) {
      lines.push(`- **InMemoryLock: ${mem.bytesPerRecord.toFixed(0)} heap bytes per record.**`);
    }
    lines.push("");
  }
  for (const e of run.scaleErrors) lines.push(`**Failed:** ${e}`, "");
  if (run.gateway) {
    const g = run.gateway;
    lines.push(
      "## Gateway cost",
      "",
      `\`lock()\` over a backend that answers at once, ${g.cycles.toLocaleString("en-US")} cycles one after another (one core):`,
      "",
      "| what | cycles/s | ÷ floor |",
      "|---|--:|--:|",
      `| floor: claim + complete called bare | ${fmtRate(g.floor)} | |`,
      `| lock(): claim → body → complete | ${fmtRate(g.lock)} | ${ratio(g.lock / g.floor)} |`,
      `| lock(), the body takes its AbortSignal | ${fmtRate(g.withSignal)} | ${ratio(g.withSignal / g.floor)} |`,
      "",
      `\`idempotentHttp\` over the same backend, a parsed push body, ${g.pushes.toLocaleString("en-US")} pushes one after another:`,
      "",
      "| what | pushes/s | ÷ without auth | µs per push |",
      "|---|--:|--:|--:|",
      `| without \`auth\` | ${fmtRate(g.push)} | | ${(1e6 / g.push).toFixed(1)} |`,
      `| with \`auth\`, one token for every push (as Pub/Sub sends it; verified once) | ${fmtRate(g.pushWithAuth)} | ${ratio(g.pushWithAuth / g.push)} | ${(1e6 / g.pushWithAuth).toFixed(1)} |`,
      `| with \`auth\`, a new token each push (RS256 verified every time; ${g.newTokens.toLocaleString("en-US")} pushes) | ${fmtRate(g.pushWithNewTokens)} | ${ratio(g.pushWithNewTokens / g.push)} | ${(1e6 / g.pushWithNewTokens).toFixed(1)} |`,
      "",
      `Expected outcomes through the surfaces, over a backend that answers every claim at once with a done key (duplicate) or a held one, ${g.deliveries.toLocaleString("en-US")} deliveries one after another in ${g.duplicate.rounds} interleaved rounds (median); "per CPU-second" divides by this process's CPU time, which a busy machine disturbs far less than the wall clock. The bare claims: the fixed-answer backend's (a promise of a constant) and InMemoryLock's for a key in that state, the reference of the target's "within 3×".`,
      "",
      "| path | fixed-answer claim /s | InMemoryLock claim /s | idempotentHttp /s | per CPU-second | idempotentMessage /s | per CPU-second | InMemoryLock claim ÷ slowest |",
      "|---|--:|--:|--:|--:|--:|--:|--:|",
      ...(["duplicate", "held"] as const).map((name) => {
        const r = g[name];
        return `| ${name} | ${fmtRate(r.bareClaim)} | ${fmtRate(r.memoryClaim)} | ${fmtRate(r.http)} | ${fmtRate(r.httpPerCpuSecond)} | ${fmtRate(r.message)} | ${fmtRate(r.messagePerCpuSecond)} | ${ratio(r.memoryClaim / Math.min(r.httpPerCpuSecond, r.messagePerCpuSecond))} |`;
      }),
      "",
    );
  }
  if (run.telemetry) lines.push(...telemetrySection(run.telemetry));
  if (run.once) lines.push(...onceSection(run.once));
  if (run.rpc) {
    lines.push(
      "## Round trips per path (Datastore, Firestore, Spanner)",
      "",
      "Each path run once on its emulator after a warm-up, its gRPC calls counted on the wire between the client and the emulator (bench/rpc-counts.ts; `test/bench/rpc-counts.test.ts` holds every path to its count). Redis runs one script per verb; PostgreSQL one statement; MariaDB one, and two for a claim that writes (a read, then the write; counted in test/backends/sql.test.ts).",
      "",
      rpcCountsMarkdown(run.rpc),
      "",
    );
  }
  return `${lines.join("\n").trimEnd()}\n`;
}

/** The cost of a variant against telemetry off, as a signed percentage of the rate lost. */
function overhead(rate: number, off: number): string {
  const lost = (1 - rate / off) * 100;
  return `${lost >= 0 ? "+" : "−"}${Math.abs(lost).toFixed(1)} %`;
}

function telemetrySection(t: TelemetryResult): string[] {
  const row = (what: string, v: "off" | "noSdk" | "sdk") =>
    `| ${what} | ${fmtRate(t.lock[v])} | ${v === "off" ? "" : overhead(t.lock[v], t.lock.off)} | ${fmtRate(t.push[v])} | ${v === "off" ? "" : overhead(t.push[v], t.push.off)} |`;
  return [
    "## Telemetry cost",
    "",
    `The gateway over the instant backend (${t.cycles.toLocaleString("en-US")} lock() cycles and ${t.pushes.toLocaleString("en-US")} idempotentHttp pushes per round, the variants taking turns, median of ${t.rounds} rounds); overhead is the rate lost against telemetry off, measured in the same run:`,
    "",
    "| telemetry | lock() /s | overhead | pushes /s | overhead |",
    "|---|--:|--:|--:|--:|",
    row("off (`telemetry: false`)", "off"),
    row("on, `@opentelemetry/api` loaded, no SDK registered (the default)", "noSdk"),
    row(
      "on, SDK recording every span and metric (BatchSpanProcessor), exporters that drop them",
      "sdk",
    ),
    "",
  ];
}
