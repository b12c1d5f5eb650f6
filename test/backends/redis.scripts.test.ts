// The Lua sources themselves: one prelude holds the shared helpers, each script carries only those
// it calls, and every header points at files and state-machine rows that exist. No Redis needed; the contract suites run the scripts.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  CLAIM,
  COMPLETE,
  code,
  FORCE_RELEASE,
  INSPECT,
  legacyLine,
  preludeHelpers,
  RELEASE,
  RENEW,
} from "../../src/backends/redis/scripts.js";

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
    expect(preludeHelpers(prelude).map((h) => h.name)).toEqual([
      "now_ms",
      "now_ms_us",
      "fenced_state",
      "end_lease",
    ]);
    expect(legacyLine(prelude)).toBe("redis.replicate_commands()");
    for (const name of verbs) {
      const body = code(read(name));
      expect({
        name,
        own: /'TIME'|replicate_commands|local function|string\.format/.test(body),
      }).toEqual({
        name,
        own: false,
      });
      // claim.lua reads the clock once, in ms and µs: its new record's first fence, and now.
      expect(body).toContain(
        name === "claim.lua" ? "local now, us = now_ms_us()" : "local now = now_ms()",
      );
    }
  });

  it("carry only the helpers their header names, and the legacy line only in their legacy text", () => {
    const prelude = read("prelude.lua");
    const helpers = preludeHelpers(prelude);
    const built = { CLAIM, COMPLETE, FORCE_RELEASE, INSPECT, RELEASE, RENEW };
    for (const [constant, s] of Object.entries(built)) {
      const name = `${constant === "FORCE_RELEASE" ? "forceRelease" : constant.toLowerCase()}.lua`;
      const file = read(name);
      // The header's "Uses a(), b() and c() from prelude.lua" line, in the prelude's order.
      const uses = /Uses ([\s\S]*?) from prelude\.lua/.exec(file)?.[1] ?? "";
      const named = helpers.map((h) => h.name).filter((h) => uses.includes(`${h}()`));
      const carried = [...s.text.matchAll(/^local function (\w+)\(/gm)].map((m) => m[1]);
      expect({ name, carried }).toEqual({ name, carried: named });
      expect(s.text.endsWith(file)).toBe(true);
      expect(s.text).not.toContain("replicate_commands");
      expect(s.legacy?.text).toBe(`redis.replicate_commands()\n${s.text}`);
      expect(s.legacy?.sha).not.toBe(s.sha);
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
