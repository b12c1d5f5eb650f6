/**
 * Hand-written SVG: small multiples of ops/s vs operations in flight (one panel per backend,
 * a line per path, solid for the library and dashed for its floor), and the scale curves
 * (throughput relative to the smallest key count).
 */
import type { ScaleResult } from "./scale.js";
import { type BackendResult, cellKey, PATHS, type Path } from "./suite.js";

const COLORS: Record<Path, string> = {
  first: "#1f77b4",
  duplicate: "#2ca02c",
  contention: "#d62728",
  mutex: "#9467bd",
};
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const text = (x: number, y: number, s: string, extra = "") =>
  `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${extra}>${esc(s)}</text>`;
/** 1.25M, 37.5k, 750: ticks are quarters of a nice bound, so keep up to two decimals. */
const compact = (n: number) =>
  n >= 1e6
    ? `${Number((n / 1e6).toFixed(2))}M`
    : n >= 1e3
      ? `${Number((n / 1e3).toFixed(2))}k`
      : `${Number(n.toFixed(2))}`;

/** A "nice" upper bound for an axis: 1, 2 or 5 × a power of ten. */
function niceMax(value: number): number {
  if (value <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(value));
  return ([1, 2, 5, 10].find((m) => m * p >= value) ?? 10) * p;
}

const W = 300;
const H = 210;
const M = { left: 48, right: 10, top: 26, bottom: 30 };

function panel(
  backend: BackendResult,
  concurrency: readonly number[],
  ox: number,
  oy: number,
): string {
  const ours = backend.contenders.find((c) => c.role === "ours");
  const out: string[] = [`<g transform="translate(${ox},${oy})">`];
  out.push(
    // The parenthesis of a title ("(native mode, emulator)") would run into the next panel.
    text(
      M.left,
      16,
      `${backend.title.replace(/\s*\(.*\)$/, "")}${ours ? ` — ${ours.name}` : ""}`,
      'font-weight="bold"',
    ),
  );
  if (!ours) return `${out.join("")}</g>`;
  const series: Array<{ path: Path; dashed: boolean; values: Array<number | undefined> }> = [];
  for (const path of PATHS) {
    for (const [name, dashed] of [
      [ours.name, false],
      [ours.floor, true],
    ] as const) {
      if (name === undefined) continue;
      const values = concurrency.map((c) => backend.cells.get(cellKey(path, c, name))?.opsPerSec);
      if (values.some((v) => v !== undefined)) series.push({ path, dashed, values });
    }
  }
  const top = niceMax(Math.max(1, ...series.flatMap((s) => s.values.map((v) => v ?? 0))));
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const x = (k: number) =>
    M.left + (concurrency.length === 1 ? pw / 2 : (k * pw) / (concurrency.length - 1));
  const y = (v: number) => M.top + ph - (v / top) * ph;
  out.push(
    `<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#ccc"/>`,
  );
  for (let t = 0; t <= 4; t++) {
    const v = (top * t) / 4;
    out.push(`<line x1="${M.left}" x2="${M.left + pw}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`);
    out.push(text(M.left - 4, y(v) + 4, compact(v), 'text-anchor="end" font-size="10"'));
  }
  concurrency.forEach((c, k) => {
    out.push(text(x(k), M.top + ph + 14, String(c), 'text-anchor="middle" font-size="10"'));
  });
  out.push(
    text(M.left + pw / 2, H - 4, "in flight", 'text-anchor="middle" font-size="10" fill="#666"'),
  );
  for (const s of series) {
    const points = s.values
      .map((v, k) => (v === undefined ? undefined : `${x(k).toFixed(1)},${y(v).toFixed(1)}`))
      .filter((p) => p !== undefined);
    const dash = s.dashed ? ' stroke-dasharray="4 3" stroke-opacity="0.7"' : "";
    out.push(
      `<polyline points="${points.join(" ")}" fill="none" stroke="${COLORS[s.path]}" stroke-width="1.8"${dash}/>`,
    );
  }
  out.push("</g>");
  return out.join("");
}

function legend(y: number): string {
  const items = PATHS.map(
    (p, k) =>
      `<line x1="${20 + k * 150}" x2="${44 + k * 150}" y1="${y}" y2="${y}" stroke="${COLORS[p]}" stroke-width="2"/>` +
      text(48 + k * 150, y + 4, p, 'font-size="11"'),
  );
  items.push(
    `<line x1="620" x2="644" y1="${y}" y2="${y}" stroke="#333" stroke-dasharray="4 3"/>` +
      text(648, y + 4, "dashed: the floor (raw round trips)", 'font-size="11"'),
  );
  return items.join("");
}

/** The provenance line as plain text: no Markdown emphasis or code marks. */
const plain = (line: string) => line.replace(/\*\*|`/g, "");

/**
 * An SVG document; `note` (the run's provenance line) goes in its <desc> and, visibly, in a
 * band of its own under the body.
 */
const svg = (title: string, width: number, height: number, body: string, note?: string) => {
  const band = note === undefined ? 0 : 18;
  const total = height + band;
  const noted = note === undefined ? "" : `<desc>${esc(plain(note))}</desc>`;
  const visible =
    note === undefined ? "" : text(6, height + 12, plain(note), 'font-size="9" fill="#555"');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${total}" viewBox="0 0 ${width} ${total}" font-family="sans-serif" font-size="12">` +
    `<title>${esc(title)}</title>${noted}<rect width="100%" height="100%" fill="white"/>${body}${visible}</svg>\n`
  );
};

export function throughputChart(
  backends: BackendResult[],
  concurrency: readonly number[],
  note?: string,
): string {
  const shown = backends.filter((b) => b.cells.size > 0);
  const columns = 4;
  const rows = Math.max(1, Math.ceil(shown.length / columns));
  const width = columns * W;
  const height = rows * H + 40;
  const panels = shown.map((b, k) =>
    panel(b, concurrency, (k % columns) * W, Math.floor(k / columns) * H),
  );
  return svg(
    "Throughput vs operations in flight, per backend",
    width,
    height,
    panels.join("") + legend(rows * H + 20),
    note,
  );
}

export function scaleChart(scales: ScaleResult[], note?: string): string {
  const width = 640;
  const height = 300;
  const m = { left: 60, right: 170, top: 30, bottom: 40 };
  const pw = width - m.left - m.right;
  const ph = height - m.top - m.bottom;
  const sizes = [...new Set(scales.flatMap((s) => s.sizes))].sort((a, b) => a - b);
  const lo = Math.log10(sizes[0] ?? 1);
  const hi = Math.log10(sizes.at(-1) ?? 10);
  const x = (n: number) => m.left + (hi === lo ? pw / 2 : ((Math.log10(n) - lo) / (hi - lo)) * pw);
  const y = (r: number) => m.top + ph - ((r - 0.5) / 0.75) * ph; // 0.5 … 1.25 of the smallest
  const out: string[] = [
    text(
      m.left,
      18,
      "First delivery at 16 in flight, relative to the smallest key count",
      'font-weight="bold"',
    ),
    `<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#ccc"/>`,
  ];
  for (const r of [0.5, 0.75, 0.9, 1, 1.25]) {
    const stroke = r === 0.9 ? 'stroke="#d62728" stroke-dasharray="5 3"' : 'stroke="#eee"';
    out.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${y(r)}" y2="${y(r)}" ${stroke}/>`);
    out.push(text(m.left - 4, y(r) + 4, `${r.toFixed(2)}×`, 'text-anchor="end" font-size="10"'));
  }
  for (const n of sizes) {
    out.push(text(x(n), m.top + ph + 14, compact(n), 'text-anchor="middle" font-size="10"'));
  }
  out.push(
    text(
      m.left + pw / 2,
      height - 6,
      "keys already stored (log scale)",
      'text-anchor="middle" font-size="10" fill="#666"',
    ),
  );
  const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"];
  scales.forEach((s, k) => {
    const base = s.results[0]?.opsPerSec ?? 0;
    if (base <= 0) return;
    const points = s.sizes.map((n, j) => {
      const r = Math.max(0.5, Math.min(1.25, (s.results[j]?.opsPerSec ?? 0) / base));
      return `${x(n).toFixed(1)},${y(r).toFixed(1)}`;
    });
    const color = palette[k % palette.length]!;
    out.push(
      `<polyline points="${points.join(" ")}" fill="none" stroke="${color}" stroke-width="2"/>`,
    );
    out.push(
      `<line x1="${m.left + pw + 12}" x2="${m.left + pw + 32}" y1="${m.top + 10 + k * 18}" y2="${m.top + 10 + k * 18}" stroke="${color}" stroke-width="2"/>`,
    );
    out.push(text(m.left + pw + 36, m.top + 14 + k * 18, s.id, 'font-size="11"'));
  });
  out.push(
    text(
      m.left + pw + 12,
      m.top + 14 + scales.length * 18 + 6,
      "dashed red: −10 %",
      'font-size="10" fill="#d62728"',
    ),
  );
  return svg("First-delivery throughput vs keys already stored", width, height, out.join(""), note);
}
