/** BENCHMARKS.md from one run's results: the targets first, then every table. */
import type { GatewayResult } from "./gateway.js";
import { fmtMs, fmtRate, type Result, type Settings } from "./runner.js";
import { SCALE_CONCURRENCY, type ScaleResult } from "./scale.js";
import { type BackendResult, cellKey, PATH_TITLE, PATHS, type Path } from "./suite.js";
import type { TelemetryResult } from "./telemetry.js";

export interface RunResult {
  settings: Settings;
  command: string;
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
  charts: { throughput?: string; scale?: string };
}

interface Target {
  what: string;
  measured: string;
  met: boolean | undefined;
}

const ratio = (n: number) => `${n.toFixed(2)}×`;
const verdict = (met: boolean | undefined) =>
  met === undefined ? "not measured" : met ? "met" : "**not met**";

function rate(
  b: BackendResult | undefined,
  path: Path,
  c: number,
  name: string,
): number | undefined {
  return b?.cells.get(cellKey(path, c, name))?.opsPerSec;
}

/** ours ÷ other at each concurrency in `at`, against a minimum. */
function ratioTarget(
  what: string,
  b: BackendResult | undefined,
  path: Path,
  ours: string,
  other: string,
  at: readonly number[],
  min: number,
): Target {
  const parts: string[] = [];
  let met: boolean | undefined = true;
  for (const c of at) {
    const a = rate(b, path, c, ours);
    const o = rate(b, path, c, other);
    if (a === undefined || o === undefined || o === 0) {
      met = undefined;
      continue;
    }
    const r = a / o;
    if (met !== undefined && r < min) met = false;
    parts.push(`${c} in flight: ${ratio(r)}`);
  }
  if (parts.length === 0) met = undefined;
  return { what, measured: parts.join(", ") || "—", met };
}

function targets(run: RunResult): Target[] {
  const by = (id: string) => run.backends.find((b) => b.id === id && b.cells.size > 0);
  const redis = by("redis");
  const pgb = by("postgres");
  const high = run.settings.concurrency.filter((c) => c >= 16);
  const out: Target[] = [
    ratioTarget(
      "Redis first delivery, ours/ioredis ≥ 2× Powertools",
      redis,
      "first",
      "ours/ioredis",
      "powertools/@redis",
      high,
      2,
    ),
    ratioTarget(
      "Redis first delivery, ours/@redis ≥ 1.25× Powertools",
      redis,
      "first",
      "ours/@redis",
      "powertools/@redis",
      high,
      1.25,
    ),
    ratioTarget(
      "Redis duplicate, ours/ioredis ≥ 3× Powertools",
      redis,
      "duplicate",
      "ours/ioredis",
      "powertools/@redis",
      high,
      3,
    ),
    ratioTarget(
      "Redis duplicate, ours/@redis ≥ 2× Powertools",
      redis,
      "duplicate",
      "ours/@redis",
      "powertools/@redis",
      high,
      2,
    ),
    ratioTarget(
      "(extra) Redis first delivery, ours/ioredis+autopipe ≥ 2× Powertools",
      redis,
      "first",
      "ours/ioredis+autopipe",
      "powertools/@redis",
      high,
      2,
    ),
  ];
  for (const path of ["first", "duplicate", "contention"] as const) {
    out.push(
      ratioTarget(
        `PostgreSQL ${path} ≥ 3× the row-lock design`,
        pgb,
        path,
        "ours",
        "row-lock",
        high,
        3,
      ),
    );
  }
  // Within 1.2× of the floor: ours' ops/s at least 1/1.2 of the floor's, at 16 in flight.
  for (const b of run.backends) {
    if (b.cells.size === 0) continue;
    for (const ours of b.contenders.filter((c) => c.role === "ours" && c.floor !== undefined)) {
      const parts: string[] = [];
      let met: boolean | undefined = true;
      for (const path of PATHS) {
        const a = rate(b, path, 16, ours.name);
        const f = rate(b, path, 16, ours.floor!);
        if (a === undefined || f === undefined) continue;
        const r = f / a;
        if (r > 1.2) met = false;
        parts.push(`${path} ${ratio(r)}`);
      }
      if (parts.length === 0) met = undefined;
      out.push({
        what: `${b.title}, ${ours.name}: within 1.2× of its floor at 16 in flight (floor ÷ ours)`,
        measured: parts.join(", ") || "—",
        met,
      });
    }
  }
  for (const id of ["redis", "postgres"]) {
    const s = run.scales.find((x) => x.id === id);
    const first = s?.results[0]?.opsPerSec;
    const last = s?.results.at(-1)?.opsPerSec;
    const known = first !== undefined && last !== undefined && first > 0;
    out.push({
      what: `Scale, ${id}: ≤ 10 % loss from ${s ? compactCount(s.sizes[0]!) : "1k"} to ${s ? compactCount(s.sizes.at(-1)!) : "1M"} keys`,
      measured: known ? `${ratio(last / first)} (${fmtRate(first)} → ${fmtRate(last)} ops/s)` : "—",
      met: known ? last / first >= 0.9 : undefined,
    });
  }
  const g = run.gateway;
  out.push({
    what: "Gateway: ≥ 500,000 lock() cycles/s over an instant backend, one core",
    measured: g ? `${fmtRate(g.lock)} /s` : "—",
    met: g ? g.lock >= 500_000 : undefined,
  });
  const t = run.telemetry;
  out.push({
    what: "Telemetry: ≤ 5 % gateway overhead with `@opentelemetry/api` and no SDK (push, lock())",
    measured: t
      ? `${overhead(t.push.noSdk, t.push.off)}, ${overhead(t.lock.noSdk, t.lock.off)}`
      : "—",
    met: t ? t.push.noSdk / t.push.off >= 0.95 && t.lock.noSdk / t.lock.off >= 0.95 : undefined,
  });
  return out;
}

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
    "| path | in flight | system | ops/s | p50 ms | p99 ms | ÷ floor | ours ÷ it |",
    "|---|--:|---|--:|--:|--:|--:|--:|",
  );
  for (const path of PATHS) {
    for (const c of concurrency) {
      for (const who of b.contenders) {
        const r: Result | undefined = b.cells.get(cellKey(path, c, who.name));
        if (r === undefined) continue;
        const floor =
          who.floor === undefined ? undefined : b.cells.get(cellKey(path, c, who.floor));
        const vsFloor = floor && floor.opsPerSec > 0 ? ratio(r.opsPerSec / floor.opsPerSec) : "";
        let oursOverIt = "";
        if (who.role === "peer" || who.role === "design") {
          const ours = oursFor(who.floor);
          const o = ours && b.cells.get(cellKey(path, c, ours.name));
          if (o && r.opsPerSec > 0)
            oursOverIt = `${ratio(o.opsPerSec / r.opsPerSec)} (${ours.name})`;
        }
        lines.push(
          `| ${path} | ${c} | ${who.name} | ${fmtRate(r.opsPerSec)} | ${fmtMs(r.p50)} | ${fmtMs(r.p99)} | ${vsFloor} | ${oursOverIt} |`,
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
    `- Date: ${run.date} (${s.size} size, ${run.seconds.toFixed(0)} s in all)`,
    `- Machine: ${run.machine}`,
    `- Node ${run.node}; client, servers and emulators on the same machine (127.0.0.1)`,
    `- Load average (1/5/15 min): ${run.loadAtStart} at start, ${run.loadAtEnd} at the end. Other processes share these cores: compare within a run, not across runs.`,
    `- Each cell: ${s.rounds} round(s); in each round every system of the backend in turn, ${s.warmupMs} ms warm-up then ${s.roundMs} ms timed, with the given number of operations in flight in one process. ops/s over all timed rounds; p50/p99 of every operation's latency.`,
    `- Paths: ${PATHS.map((p) => `**${p}** = ${PATH_TITLE[p]}`).join("; ")}. Duplicates cycle over ${s.dupKeys.toLocaleString("en-US")} done keys.`,
    "- **floor** = the same number of round trips as the library makes on that path, raw, with the driver alone (per backend below); **row-lock** = the classic `BEGIN; SELECT … FOR UPDATE; INSERT or UPDATE; COMMIT` claim; peers are other libraries on the same server in the same run.",
    "",
    "## Targets",
    "",
    "| target | measured | |",
    "|---|---|---|",
    ...targets(run).map((t) => `| ${t.what} | ${t.measured} | ${verdict(t.met)} |`),
    "",
  ];
  if (run.charts.throughput) {
    lines.push(
      "## Throughput vs operations in flight",
      "",
      `![ops/s vs in flight per backend](${run.charts.throughput})`,
      "",
    );
  }
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
    );
  }
  if (run.telemetry) lines.push(...telemetrySection(run.telemetry));
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
