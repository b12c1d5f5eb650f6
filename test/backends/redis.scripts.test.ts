// The Lua sources themselves: one prelude holds the shared helpers, and every header points at
// files and state-machine rows that exist. No Redis needed; the contract suites run the scripts.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const dir = join(root, "src/backends/redis");
const read = (name: string) => readFileSync(join(dir, name), "utf8");
const verbs = readdirSync(dir)
  .filter((name) => name.endsWith(".lua") && name !== "prelude.lua")
  .sort();

/** The rows of the table in docs/state-machine.md: from, the calls it names, guard. */
const table = readFileSync(join(root, "docs/state-machine.md"), "utf8")
  .split("\n")
  .filter((line) => /^\| (absent|claimed|done) \|/.test(line))
  .map((line) => line.split("|").map((cell) => cell.trim()))
  .map(([, from, calls, guard]) => ({ from, calls: calls?.split(" / "), guard }));

describe("the Redis Lua scripts", () => {
  it("are the four verbs and the two operator calls, each with the prelude's helpers and none of its own", () => {
    expect(verbs).toEqual([
      "claim.lua",
      "complete.lua",
      "forceRelease.lua",
      "inspect.lua",
      "release.lua",
      "renew.lua",
    ]);
    const prelude = read("prelude.lua");
    expect(prelude).toMatch(/^local function int\(n\)$/m);
    expect(prelude).toMatch(/^local function now_ms\(\)$/m);
    expect(prelude).toMatch(/^local function now_us\(\)$/m);
    expect(prelude).toContain("redis.replicate_commands()");
    for (const name of verbs) {
      const code = read(name).replace(/^--\[\[[\s\S]*?\]\]\n/, "");
      expect({ name, time: /'TIME'|replicate_commands|function int\b/.test(code) }).toEqual({
        name,
        time: false,
      });
      // claim.lua reads the clock once, in µs: its new record's first fence, and now in ms.
      expect(code).toContain(
        name === "claim.lua" ? "local now = math.floor(us / 1000)" : "local now = now_ms()",
      );
    }
  });

  it("cite only files that exist", () => {
    for (const name of ["prelude.lua", ...verbs]) {
      const cited = [...read(name).matchAll(/[\w./-]+\.(?:md|lua|ts)\b/g)].map((m) => m[0]);
      const missing = cited.filter(
        (path) => !existsSync(join(root, path)) && !existsSync(join(dir, path)),
      );
      expect({ name, missing }).toEqual({ name, missing: [] });
    }
  });

  it("name state-machine rows that are in docs/state-machine.md", () => {
    expect(table.length).toBeGreaterThan(10);
    for (const name of verbs) {
      const verb = name.replace(/\.lua$/, "");
      const rows = [...read(name).matchAll(/^ {4}(absent|claimed|done) +\| (\w+) +\| (.+?) +→/gm)];
      expect({ name, rows: rows.length > 0 }).toEqual({ name, rows: true });
      for (const [line, from, call, guard] of rows) {
        expect(call).toBe(verb);
        const found = table.some(
          (row) => row.from === from && row.calls?.includes(call ?? "") && row.guard === guard,
        );
        expect({ line, found }).toEqual({ line, found: true });
      }
    }
  });
});
