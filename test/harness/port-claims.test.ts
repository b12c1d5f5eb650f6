// freePort's claims across processes: the suites CI runs side by side each pick emulator ports,
// and a port one picked but had not bound yet must not be handed to another.
import { spawn } from "node:child_process";
import { once } from "node:events";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { claimPort } from "../support/net.js";

const NET = new URL("../support/net.ts", import.meta.url).href;

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

  it("takes over a claim left empty by a writer that died, once it is old, not before", () => {
    const dir = claimsDir();
    const file = join(dir, "13000");
    writeFileSync(file, "");
    expect(claimPort(13_000, dir)).toBe(false);
    const old = new Date(Date.now() - 60_000);
    utimesSync(file, old, old);
    expect(claimPort(13_000, dir)).toBe(true);
  });

  it("leaves an abandoned claim to the taker that holds its takeover lock", () => {
    const dir = claimsDir();
    writeFileSync(join(dir, "14000"), "999999999"); // no such pid
    mkdirSync(join(dir, "14000.takeover"));
    expect(claimPort(14_000, dir)).toBe(false);
    // A lock whose taker died is cleared once old; the next call takes the claim over.
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(dir, "14000.takeover"), old, old);
    expect(claimPort(14_000, dir)).toBe(false);
    expect(claimPort(14_000, dir)).toBe(true);
    expect(readFileSync(join(dir, "14000"), "utf8")).toBe(String(process.pid));
  });

  it("removes a process's claims when it exits", async () => {
    const dir = claimsDir();
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        `const { claimPort } = await import(${JSON.stringify(NET)});
         if (!claimPort(16000, ${JSON.stringify(dir)})) process.exit(3);
         console.log("claimed");`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let said = "";
    child.stdout.on("data", (chunk) => {
      said += String(chunk);
    });
    const [exitCode] = await once(child, "exit");
    expect({ exitCode, said: said.trim() }).toEqual({ exitCode: 0, said: "claimed" });
    expect(existsSync(join(dir, "16000"))).toBe(false);
  });

  it("hands a port out once in this process too (its worker threads share its pid)", () => {
    const dir = claimsDir();
    expect(claimPort(15_000, dir)).toBe(true);
    expect(claimPort(15_000, dir)).toBe(false);
  });
});
