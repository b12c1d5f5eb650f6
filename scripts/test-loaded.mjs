#!/usr/bin/env node
// `npm run test:loaded [-- vitest args]`: the test suite while busy processes compete for the
// cores, the way a shared CI machine runs it. A test that only passes on an idle machine (a
// lease shorter than a cold store's first write, a timer expected on time) fails here.
//
// Starts TEST_LOADED_BURNERS (default 2) CPU-burning child processes, runs `vitest run` with
// the given arguments, and ends the burners whatever happens; the exit code is vitest's. Each
// burner also stops on its own when this process goes away or after TEST_LOADED_CAP_S
// (default 3600) seconds, so none can outlive a killed run.
import { fork, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const BURNER = "--burner";

if (process.argv[2] === BURNER) {
  // A burner: spin in 50 ms slices; between slices, stop if the parent is gone or the cap passed.
  const parent = Number(process.argv[3]);
  const deadline = Date.now() + Number(process.argv[4]) * 1000;
  process.on("disconnect", () => process.exit(0));
  let sink = 0;
  const parentAlive = () => {
    try {
      process.kill(parent, 0);
      return process.connected;
    } catch {
      return false;
    }
  };
  const slice = () => {
    if (Date.now() > deadline || !parentAlive()) process.exit(0);
    const until = Date.now() + 50;
    while (Date.now() < until) sink = (sink * 31 + 7) % 1_000_003;
    setImmediate(slice);
  };
  slice();
} else {
  await main();
}

function whole(name, fallback) {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) {
    console.error(`test:loaded: ${name} must be a whole number, got "${text}"`);
    process.exit(2);
  }
  return value;
}

async function main() {
  const burnerCount = whole("TEST_LOADED_BURNERS", 2);
  const capSeconds = whole("TEST_LOADED_CAP_S", 3600);
  const require = createRequire(import.meta.url);
  const vitestPackage = require.resolve("vitest/package.json");
  const vitestBin = join(dirname(vitestPackage), require(vitestPackage).bin.vitest);

  const burners = Array.from({ length: burnerCount }, () =>
    fork(fileURLToPath(import.meta.url), [BURNER, String(process.pid), String(capSeconds)], {
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    }),
  );
  const stopBurners = () => {
    for (const burner of burners) {
      if (burner.exitCode === null && burner.signalCode === null) burner.kill("SIGKILL");
    }
  };
  process.on("exit", stopBurners);

  const started = Date.now();
  let peakLoad = loadavg()[0];
  const sampler = setInterval(() => {
    peakLoad = Math.max(peakLoad, loadavg()[0]);
  }, 5_000);
  console.log(
    `test:loaded: ${burnerCount} busy processes on ${cpus().length} cores ` +
      `(load average ${loadavg()[0].toFixed(2)}), then vitest run ${process.argv.slice(2).join(" ")}`,
  );

  const vitest = spawn(process.execPath, [vitestBin, "run", ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => vitest.kill(signal));
  }
  const code = await new Promise((resolve) => {
    vitest.on("error", (error) => {
      console.error(`test:loaded: vitest did not start: ${error.message}`);
      resolve(1);
    });
    vitest.on("exit", (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
  });
  clearInterval(sampler);
  stopBurners();
  peakLoad = Math.max(peakLoad, loadavg()[0]);
  const [one, five] = loadavg();
  console.log(
    `test:loaded: vitest exited ${code} after ${((Date.now() - started) / 1000).toFixed(0)} s ` +
      `with ${burnerCount} busy processes; load average ${one.toFixed(2)} (1 min), ` +
      `${five.toFixed(2)} (5 min), peak 1-min ${peakLoad.toFixed(2)}`,
  );
  process.exitCode = code;
}
