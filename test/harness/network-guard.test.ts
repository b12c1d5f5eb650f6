// The network guard (network-guard.mjs, loaded by network-setup.ts in every test worker):
// every way out of loopback is refused before anything is sent, loopback and Unix sockets
// still work, a test that swallows a refusal still fails, and child processes are guarded.
//
// The addresses are never contacted: 192.0.2.1 is TEST-NET-1 (RFC 5737), 2001:db8::1 the
// IPv6 documentation prefix (RFC 3849), and .invalid names never resolve (RFC 2606).
import { execFile } from "node:child_process";
import dgram from "node:dgram";
import dns from "node:dns";
import { lookup as namedLookup } from "node:dns/promises";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { isLoopback, type NetworkViolation, takeNetworkViolations } from "./network-guard.mjs";

const AWAY = "192.0.2.1";
const AWAY6 = "2001:db8::1";
const NAME = "metadata.example.invalid";
const REFUSED = /^network guard: refused /;
const root = fileURLToPath(new URL("../..", import.meta.url));

/** The refusals recorded by the last steps; taking them keeps the setup's check quiet. */
function refusals(): NetworkViolation[] {
  return takeNetworkViolations();
}

afterEach(() => {
  // Anything a test here left unasserted is a bug in the test: fail it by name.
  const left = refusals();
  expect(left.map((v) => `${v.what} ${v.target}`)).toEqual([]);
});

/** A socket's OS handle: null until connect() creates one. */
const handleOf = (socket: net.Socket) => (socket as unknown as { _handle: unknown })._handle;

/** A loopback TCP server that answers every connection by closing it. */
async function loopbackServer(host = "127.0.0.1"): Promise<{ port: number; close(): void }> {
  const server = net.createServer((socket) => socket.end());
  await new Promise<void>((done) => server.listen(0, host, done));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => server.close(),
  };
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

async function connected(socket: net.Socket): Promise<void> {
  await new Promise<void>((done, fail) => socket.once("connect", done).once("error", fail));
  socket.destroy();
}

describe("isLoopback", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.45.6.7", true],
    ["localhost", true],
    ["LOCALHOST.", true],
    ["::1", true],
    ["[::1]", true],
    ["0:0:0:0:0:0:0:1", true],
    ["::ffff:127.0.0.1", true],
    [AWAY, false],
    [AWAY6, false],
    ["::ffff:192.0.2.1", false],
    ["169.254.169.254", false],
    ["0.0.0.0", false],
    ["::", false],
    ["metadata.google.internal", false],
    ["localhost.example.invalid", false],
  ])("%s → %s", (host, expected) => {
    expect(isLoopback(host)).toBe(expected);
  });
});

describe("TCP: refused before a socket exists", () => {
  it.each([
    ["IPv4", AWAY, `${AWAY}:80`],
    ["IPv6", AWAY6, `${AWAY6}:80`],
    ["a name (no lookup either)", NAME, `${NAME}:80`],
    ["the metadata server", "169.254.169.254", "169.254.169.254:80"],
  ])(
    "net.Socket#connect to %s throws, naming the address, with no OS socket made",
    (_, host, target) => {
      const socket = new net.Socket();
      let lookups = 0;
      const lookup = () => {
        lookups += 1;
      };
      expect(() => socket.connect({ host, port: 80, lookup })).toThrow(
        `network guard: refused connect to ${target}`,
      );
      expect(handleOf(socket)).toBeNull();
      expect(socket.connecting).toBe(false);
      expect(lookups).toBe(0);
      socket.destroy();
      const [violation, ...more] = refusals();
      expect(more).toEqual([]);
      expect(violation).toMatchObject({ what: "connect to", target, pid: process.pid });
      // The stack leads back to the call that tried.
      expect(violation?.stack).toContain("network-guard.test.ts");
    },
  );

  it("net.connect and net.createConnection, in all their argument forms", () => {
    expect(() => net.connect(80, AWAY)).toThrow(REFUSED);
    expect(() => net.connect({ port: 80, host: AWAY })).toThrow(REFUSED);
    expect(() => net.createConnection({ port: 80, host: AWAY, family: 4 })).toThrow(REFUSED);
    expect(() => new net.Socket().connect(443, `[${AWAY6}]`)).toThrow(REFUSED);
    expect(refusals().map((v) => v.target)).toEqual([
      `${AWAY}:80`,
      `${AWAY}:80`,
      `${AWAY}:80`,
      `${AWAY6}:443`,
    ]);
  });

  it("tls.connect", () => {
    expect(() => tls.connect({ host: AWAY, port: 443, servername: "x.invalid" })).toThrow(
      `refused connect to ${AWAY}:443`,
    );
    expect(refusals()).toHaveLength(1);
  });

  it("http.request, with and without an agent", () => {
    expect(() => http.get(`http://${AWAY}/`)).toThrow(`refused connect to ${AWAY}:80`);
    expect(() => http.get({ host: NAME, port: 8080, agent: false })).toThrow(
      `refused connect to ${NAME}:8080`,
    );
    expect(refusals()).toHaveLength(2);
  });

  it("http2.connect (gRPC's way out)", () => {
    expect(() => http2.connect(`http://${AWAY}:8085`)).toThrow(`refused connect to ${AWAY}:8085`);
    expect(refusals()).toHaveLength(1);
  });

  it("fetch rejects at once, from the caller's stack, without undici connecting", async () => {
    const started = Date.now();
    await expect(fetch(`http://${AWAY}/`)).rejects.toThrow(`refused fetch of http://${AWAY}`);
    await expect(fetch(new URL(`https://${NAME}/x`))).rejects.toThrow(
      `refused fetch of https://${NAME}`,
    );
    await expect(fetch(new Request(`http://[${AWAY6}]:81/`))).rejects.toThrow(REFUSED);
    // A connect to TEST-NET-1 would hang until a timeout: this was never attempted.
    expect(Date.now() - started).toBeLessThan(1_000);
    const found = refusals();
    expect(found.map((v) => v.target)).toEqual([
      `http://${AWAY}`,
      `https://${NAME}`,
      `http://[${AWAY6}]:81`,
    ]);
    expect(found[0]?.stack).toContain("network-guard.test.ts");
  });

  it("undici's own connect is guarded too (fetch past the fetch check)", async () => {
    // The Socket#connect patch is what fetch reaches when the URL check is bypassed.
    const socket = new net.Socket();
    expect(() => socket.connect({ host: AWAY, port: 443 })).toThrow(REFUSED);
    socket.destroy();
    expect(refusals()).toHaveLength(1);
  });
});

describe("names and datagrams", () => {
  it("dns.lookup of a name other than localhost throws; the promise forms reject", async () => {
    let answered = false;
    expect(() =>
      dns.lookup(NAME, () => {
        answered = true;
      }),
    ).toThrow(`network guard: refused name lookup of ${NAME}`);
    await expect(dns.promises.lookup(NAME)).rejects.toThrow(`refused name lookup of ${NAME}`);
    // A named import of the builtin sees the patch as well.
    await expect(namedLookup("metadata.google.internal")).rejects.toThrow(REFUSED);
    await expect(promisify(dns.lookup)(NAME)).rejects.toThrow(REFUSED);
    expect(answered).toBe(false);
    expect(refusals().map((v) => v.target)).toEqual([NAME, NAME, "metadata.google.internal", NAME]);
  });

  it("dns.lookup of localhost and of IP literals still answers (no DNS server asked)", async () => {
    const { address } = await dns.promises.lookup("localhost");
    expect(isLoopback(address)).toBe(true);
    // util.promisify keeps lookup's { address, family } shape through the wrapper.
    expect(await promisify(dns.lookup)("127.0.0.1")).toEqual({ address: "127.0.0.1", family: 4 });
    expect(await dns.promises.lookup(AWAY)).toEqual({ address: AWAY, family: 4 });
  });

  it("dns.resolve*, dns.reverse and Resolvers: refused unless their DNS servers are loopback", async () => {
    expect(() => dns.resolve4("localhost", () => {})).toThrow(/refused resolve4\("localhost"\)/);
    expect(() => dns.reverse(AWAY, () => {})).toThrow(REFUSED);
    expect(() => new dns.Resolver().resolveTxt(NAME, () => {})).toThrow(REFUSED);
    await expect(dns.promises.resolve(NAME)).rejects.toThrow(REFUSED);
    await expect(new dns.promises.Resolver().resolveSrv(NAME)).rejects.toThrow(REFUSED);
    expect(() => dns.lookupService(AWAY, 80, () => {})).toThrow(
      `refused reverse lookup of ${AWAY}:80`,
    );
    expect(refusals()).toHaveLength(6);
    // A resolver pointed at a loopback server is allowed (nothing listens: it fails, unguarded).
    const local = new dns.promises.Resolver({ timeout: 200, tries: 1 });
    local.setServers(["127.0.0.1:9"]);
    await expect(local.resolve4(NAME)).rejects.toMatchObject({ code: expect.any(String) });
    expect(refusals()).toEqual([]);
  });

  it("dgram: send and connect beyond loopback throw; to loopback they work", async () => {
    const socket = dgram.createSocket("udp4");
    try {
      expect(() => socket.send("x", 53, AWAY)).toThrow(`refused UDP send to ${AWAY}:53`);
      expect(() => socket.send(Buffer.from("xy"), 0, 1, 53, AWAY)).toThrow(REFUSED);
      expect(() => socket.connect(53, AWAY)).toThrow(`refused UDP connect to ${AWAY}:53`);
      expect(refusals()).toHaveLength(3);
      await new Promise<void>((done, fail) =>
        socket.send("x", 9, "127.0.0.1", (error) => (error ? fail(error) : done())),
      );
    } finally {
      socket.close();
    }
  });
});

describe("loopback and Unix sockets are untouched", () => {
  it("127.0.0.1, localhost and ::1", async () => {
    const v4 = await loopbackServer("127.0.0.1");
    try {
      await connected(net.connect(v4.port, "127.0.0.1"));
      // 127.0.0.2 is loopback; whether it answers depends on the host, so only a refusal
      // by the guard counts (checked below), and a silent host may not stall the test.
      const other = net.connect({ port: v4.port, host: "127.0.0.2" }).on("error", () => {});
      await Promise.race([connected(other).catch(() => {}), sleep(2_000)]);
      other.destroy();
      const response = await fetch(`http://127.0.0.1:${v4.port}/`, {
        signal: AbortSignal.timeout(5_000),
      }).catch((e: Error) => e);
      // The server closes without answering: a network error, not a refusal.
      expect(String((response as Error).message)).not.toMatch(REFUSED);
    } finally {
      v4.close();
    }
    const any = await loopbackServer("localhost");
    try {
      await connected(net.connect(any.port, "localhost"));
    } finally {
      any.close();
    }
    const v6 = await loopbackServer("::1").catch(() => undefined); // no IPv6 on some hosts
    if (v6) {
      try {
        await connected(net.connect(v6.port, "::1"));
      } finally {
        v6.close();
      }
    }
    expect(refusals()).toEqual([]);
  });

  it("a Unix socket path", async () => {
    const dir = mkdtempSync(join(tmpdir(), "guard-"));
    const path = join(dir, "s.sock");
    const server = net.createServer((socket) => socket.end());
    await new Promise<void>((done) => server.listen(path, done));
    try {
      await connected(net.connect(path));
      await connected(net.connect({ path }));
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a test that leaves loopback fails", () => {
  it("even when it swallows the refusal, with the address and the stack in the failure", async () => {
    const run = promisify(execFile);
    // The report to a file: vitest 5 writes it there, not to stdout, unless told otherwise.
    const out = mkdtempSync(join(tmpdir(), "network-guard-report-"));
    const reportFile = join(out, "report.json");
    const result = await run(
      process.execPath,
      [
        join(root, "node_modules/vitest/vitest.mjs"),
        "run",
        "--config",
        "test/harness/fixtures/vitest.network-guard.config.ts",
        "--reporter=json",
        `--outputFile=${reportFile}`,
      ],
      { cwd: root, timeout: 60_000 },
    ).catch((error: { code?: number; stdout: string; stderr: string }) => error);
    expect("code" in result ? result.code : 0).toBe(1);
    const text = readFileSync(reportFile, "utf8");
    rmSync(out, { recursive: true, force: true });
    const report = JSON.parse(text) as {
      testResults: {
        assertionResults: { title: string; status: string; failureMessages: string[] }[];
      }[];
    };
    const tests = new Map(report.testResults[0]?.assertionResults.map((t) => [t.title, t]) ?? []);
    expect(Object.fromEntries([...tests].map(([title, t]) => [title, t.status]))).toEqual({
      "swallows a refused fetch, as a metadata probe would": "failed",
      "swallows a refused net.connect": "failed",
      "lets the refusal through": "failed",
      "connects to loopback": "passed",
    });
    for (const title of [
      "swallows a refused fetch, as a metadata probe would",
      "swallows a refused net.connect",
    ]) {
      const message = tests.get(title)?.failureMessages.join("\n") ?? "";
      expect(message).toContain("attempt(s) to reach beyond loopback during this test");
      expect(message).toContain(AWAY);
      expect(message).toContain("network-guard.fixture.ts");
    }
    expect(tests.get("lets the refusal through")?.failureMessages.join("\n")).toContain(
      `network guard: refused connect to ${AWAY}:80`,
    );
  }, 90_000);
});

describe("child processes are guarded", () => {
  const run = promisify(execFile);
  const node = (code: string) =>
    run(process.execPath, ["-e", code], { timeout: 20_000 }).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number; stderr: string }) => error,
    );

  it("inherit the guard and METADATA_SERVER_DETECTION=none", async () => {
    expect(process.env.METADATA_SERVER_DETECTION).toBe("none");
    expect(process.env.NODE_OPTIONS).toContain("network-guard.mjs");
    const { stdout } = await run(process.execPath, [
      "-e",
      "console.log(process.env.METADATA_SERVER_DETECTION)",
    ]);
    expect(stdout.trim()).toBe("none");
  });

  it("a child's refused connect is an uncaught error naming the address", async () => {
    const result = await node(`require("node:net").connect(80, "${AWAY}")`);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`network guard: refused connect to ${AWAY}:80`);
  });

  it("a child that swallows the refusal still exits 1 and prints it", async () => {
    const result = await node(
      `fetch("http://${AWAY}/").catch(() => {}); try { require("node:net").connect(80, "${AWAY}"); } catch {}`,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("network guard: 2 attempt(s) to reach beyond loopback");
    expect(result.stderr).toContain(`fetch of http://${AWAY}`);
    expect(result.stderr).toContain(`connect to ${AWAY}:80`);
  });
});
