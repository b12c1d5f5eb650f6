// freePort's claims across processes: the suites CI runs side by side each pick emulator ports,
// and a port one picked but had not bound yet must not be handed to another.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { claimPort } from "../support/net.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function claimsDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "port-claims-"));
  dirs.push(dir);
  return dir;
}

/** Another process that claims port in dir, says so, and lives until killed. */
async function claimer(port: number, dir: string) {
  const child = spawn(
    process.execPath,
    [
      "-e",
      `require("node:fs").writeFileSync(${JSON.stringify(join(dir, String(port)))}, String(process.pid), { flag: "wx" });
       console.log("claimed"); setInterval(() => {}, 1000);`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  await once(child.stdout, "data");
  return child;
}

describe("claimPort", () => {
  it("refuses a port another live process claimed, and takes it over once that process is gone", async () => {
    const dir = claimsDir();
    const other = await claimer(12_345, dir);
    try {
      expect(claimPort(12_345, dir)).toBe(false);
      expect(claimPort(12_346, dir)).toBe(true);
    } finally {
      other.kill("SIGKILL");
      await once(other, "exit");
    }
    expect(claimPort(12_345, dir)).toBe(true);
    expect(readFileSync(join(dir, "12345"), "utf8")).toBe(String(process.pid));
  });

  it("hands a port out once in this process too (its worker threads share its pid)", () => {
    const dir = claimsDir();
    expect(claimPort(15_000, dir)).toBe(true);
    expect(claimPort(15_000, dir)).toBe(false);
  });
});
