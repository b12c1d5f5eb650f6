// The network guard: tests, the functional suite and the processes they start may reach
// loopback only (127.0.0.0/8, ::1, the name `localhost`) and Unix sockets. Any other connect,
// name lookup or datagram is refused before it leaves the process: the call throws an Error
// (code ERR_NETWORK_GUARD) naming the address, and the attempt is recorded, so a caller that
// swallows the error (the Google libraries' metadata-server probe does) still fails the test:
// test/harness/network-setup.ts checks the record around every test.
//
// Plain JavaScript with no dependencies, so any Node process can load it without a loader:
//   node --import ./test/harness/network-guard.mjs …
// Installing it also adds it to NODE_OPTIONS, so every Node process started from a guarded one
// (with the inherited environment) is guarded too. Outside vitest, a guarded process prints
// each refusal to stderr when it happens (a SIGKILLed worker's too), and at exit, if anything
// was refused, it says so and exits with code 1 where it would have exited with 0.
import dgram from "node:dgram";
import dns from "node:dns";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";
import { fileURLToPath } from "node:url";

const STATE = Symbol.for("gcp-pubsub-idempotency.network-guard");
const LOOPBACK = new net.BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");
const ALLOWED = "loopback only: 127.0.0.0/8, ::1, localhost";

/** The host without brackets, a trailing dot or case. */
function bare(host) {
  let h = String(host).trim().toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.endsWith(".") && net.isIP(h) === 0) h = h.slice(0, -1);
  return h;
}

/** True for a loopback IP address (IPv4-mapped IPv6 included) and the name `localhost`. */
export function isLoopback(host) {
  const h = bare(host);
  if (h === "localhost") return true;
  const family = net.isIP(h);
  if (family === 4) return LOOPBACK.check(h, "ipv4");
  if (family === 6) return LOOPBACK.check(h, "ipv6");
  return false;
}

/** Looking up an IP literal or `localhost` sends nothing; any other name may ask a DNS server. */
function lookupIsLocal(host) {
  const h = bare(host);
  return h === "localhost" || net.isIP(h) !== 0;
}

// One state per process, shared by every copy of this module (vitest loads its own).
globalThis[STATE] ??= { installed: false, violations: [], printEach: true, exitReport: true };
const state = globalThis[STATE];

/** Record a refused attempt and build the error the patched call throws. */
function refuse(what, target, caller) {
  const error = new Error(
    `network guard: refused ${what} ${target} (${ALLOWED}; see test/harness/network-guard.mjs)`,
  );
  error.code = "ERR_NETWORK_GUARD";
  // Deep enough to reach the test's own frames through a client library's layers.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = Math.max(limit, 30);
  Error.captureStackTrace(error, caller);
  Error.stackTraceLimit = limit;
  const stack = error.stack ?? String(error);
  state.violations.push({ what, target, stack, pid: process.pid });
  if (state.printEach) process.stderr.write(`${stack}\n`);
  return error;
}

/** The violations recorded since the last call, removed from the record. */
export function takeNetworkViolations() {
  return state.violations.splice(0);
}

/** One message for a list of violations: each attempt with its stack. */
export function describeNetworkViolations(violations, where = "") {
  const lines = [
    `network guard: ${violations.length} attempt(s) to reach beyond loopback${where}:`,
    ...violations.map((v) => `- ${v.what} ${v.target} (pid ${v.pid})\n${v.stack}`),
  ];
  return lines.join("\n");
}

/**
 * How this process reports refusals besides throwing: `printEach` writes each one to stderr
 * as it happens; `exitReport` prints those not taken by takeNetworkViolations() at exit and
 * turns exit code 0 into 1. Both default to true; the vitest setup turns printEach off.
 */
export function configureNetworkGuard(options) {
  if (options.printEach !== undefined) state.printEach = options.printEach;
  if (options.exitReport !== undefined) state.exitReport = options.exitReport;
}

/** Copy the original's symbol-keyed properties (util.promisify's hints) onto its wrapper. */
function wrapLike(original, wrapper) {
  for (const key of Reflect.ownKeys(original)) {
    if (typeof key !== "symbol") continue;
    const descriptor = Object.getOwnPropertyDescriptor(original, key);
    if (descriptor) Object.defineProperty(wrapper, key, descriptor);
  }
  Object.defineProperty(wrapper, "name", { value: original.name });
  return wrapper;
}

/** Where a net.Socket#connect call goes, from any of its argument forms. */
function connectTarget(args) {
  let first = args[0];
  // net.connect() passes its normalised [options, callback] array.
  if (Array.isArray(first)) first = first[0];
  if (first !== null && typeof first === "object") {
    if (first.path !== undefined && first.path !== null) return { local: true };
    return { host: first.host || "localhost", port: first.port };
  }
  if (typeof first === "string" && !/^\s*\d+\s*$/.test(first)) return { local: true }; // a path
  return { host: (typeof args[1] === "string" && args[1]) || "localhost", port: first };
}

function guardSockets() {
  const connect = net.Socket.prototype.connect;
  // tls.connect, http(s).request, http2.connect, fetch (undici) and gRPC all end here.
  net.Socket.prototype.connect = wrapLike(connect, function guardedConnect(...args) {
    const target = connectTarget(args);
    if (!target.local && !isLoopback(target.host)) {
      throw refuse("connect to", `${bare(target.host)}:${target.port}`, guardedConnect);
    }
    return connect.apply(this, args);
  });
}

function guardFetch() {
  const original = globalThis.fetch;
  if (typeof original !== "function") return;
  // fetch connects on a later tick, from undici's frames: refuse here to keep the caller's stack.
  globalThis.fetch = wrapLike(original, function guardedFetch(input, init) {
    let url;
    try {
      url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
    } catch {
      return original.call(this, input, init); // fetch reports the bad URL itself
    }
    if (!isLoopback(url.hostname) && (url.protocol === "http:" || url.protocol === "https:")) {
      return Promise.reject(refuse("fetch of", url.origin, guardedFetch));
    }
    return original.call(this, input, init);
  });
}

function guardDns() {
  const lookup = (original, promises) =>
    wrapLike(original, function guardedLookup(hostname, ...rest) {
      if (!lookupIsLocal(hostname)) {
        const error = refuse("name lookup of", bare(hostname), guardedLookup);
        if (promises) return Promise.reject(error);
        throw error;
      }
      return original.call(this, hostname, ...rest);
    });
  const lookupService = (original, promises) =>
    wrapLike(original, function guardedLookupService(address, port, ...rest) {
      if (!isLoopback(address)) {
        const error = refuse("reverse lookup of", `${bare(address)}:${port}`, guardedLookupService);
        if (promises) return Promise.reject(error);
        throw error;
      }
      return original.call(this, address, port, ...rest);
    });
  // resolve*() and reverse() always ask the resolver's DNS servers, even for `localhost`.
  const viaServers = (original, name, promises, servers) =>
    wrapLike(original, function guardedResolve(...args) {
      const asked = servers(this);
      const away = asked.filter((server) => !isLoopback(server));
      if (away.length > 0 || asked.length === 0) {
        const error = refuse(
          `${name}(${JSON.stringify(args[0])}) via DNS server`,
          away.join(", ") || "(none)",
          guardedResolve,
        );
        if (promises) return Promise.reject(error);
        throw error;
      }
      return original.apply(this, args);
    });
  const resolving = (key) => /^(resolve|reverse)/.test(key);
  // "1.2.3.4", "1.2.3.4:53", "::1" or "[::1]:53": the address without the port.
  const serverAddress = (s) =>
    s.startsWith("[") ? s.slice(1, s.indexOf("]")) : net.isIP(s) ? s : s.replace(/:\d+$/, "");
  for (const [target, promises, Resolver] of [
    [dns, false, dns.Resolver],
    [dns.promises, true, dns.promises.Resolver],
  ]) {
    target.lookup = lookup(target.lookup, promises);
    target.lookupService = lookupService(target.lookupService, promises);
    // The module's own resolve*() are bound to the default resolver: its servers are the module's.
    for (const key of Object.keys(target).filter(resolving)) {
      if (typeof target[key] !== "function") continue;
      target[key] = viaServers(target[key], key, promises, () =>
        dns.getServers().map(serverAddress),
      );
    }
    for (const key of Object.getOwnPropertyNames(Resolver.prototype).filter(resolving)) {
      const original = Resolver.prototype[key];
      if (typeof original !== "function") continue;
      Resolver.prototype[key] = viaServers(original, key, promises, (resolver) =>
        resolver.getServers().map(serverAddress),
      );
    }
  }
}

function guardDatagrams() {
  const { send, connect } = dgram.Socket.prototype;
  dgram.Socket.prototype.connect = wrapLike(
    connect,
    function guardedConnect(port, address, ...rest) {
      if (typeof address === "string" && !isLoopback(address)) {
        throw refuse("UDP connect to", `${bare(address)}:${port}`, guardedConnect);
      }
      return connect.call(this, port, address, ...rest);
    },
  );
  dgram.Socket.prototype.send = wrapLike(send, function guardedSend(...args) {
    // send(msg, port, address, cb) or send(msg, offset, length, port, address, cb)
    const [port, address] = typeof args[2] === "number" ? [args[3], args[4]] : [args[1], args[2]];
    if (typeof address === "string" && !isLoopback(address)) {
      throw refuse("UDP send to", `${bare(address)}:${port}`, guardedSend);
    }
    return send.apply(this, args);
  });
}

/** Add this module to NODE_OPTIONS, so Node processes started from this one are guarded. */
function propagate() {
  const flag = `--import=${import.meta.url}`;
  const current = process.env.NODE_OPTIONS ?? "";
  if (!current.includes(import.meta.url) && !current.includes(fileURLToPath(import.meta.url))) {
    process.env.NODE_OPTIONS = current ? `${current} ${flag}` : flag;
  }
}

/** Patch net, tls (through net), dns, dgram and fetch in this process; once per process. */
export function installNetworkGuard() {
  if (state.installed) return;
  state.installed = true;
  guardSockets();
  guardFetch();
  guardDns();
  guardDatagrams();
  // ESM named imports of builtins (import { lookup } from "node:dns") see the patches too.
  syncBuiltinESMExports();
  process.on("exit", () => {
    if (!state.exitReport || state.violations.length === 0) return;
    const where = ` in process ${process.pid} (${process.argv.slice(1).join(" ")})`;
    const violations = takeNetworkViolations();
    // Each was printed with its stack when it happened: a summary is enough then.
    const text = state.printEach
      ? `network guard: ${violations.length} attempt(s) to reach beyond loopback${where}: ${violations.map((v) => `${v.what} ${v.target}`).join("; ")}`
      : describeNetworkViolations(violations, where);
    process.stderr.write(`${text}\n`);
    if (!process.exitCode) process.exitCode = 1;
  });
}

installNetworkGuard();
propagate();
