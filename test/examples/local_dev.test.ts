import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const run = promisify(execFile);

it("examples/local_dev.ts skips the duplicate, heals the crash and sends each order once", async () => {
  const { stdout } = await run(process.execPath, ["--import", "tsx", "examples/local_dev.ts"], {
    timeout: 20_000,
  });
  expect(stdout).toContain("po-2: duplicate, body skipped -> ack");
  expect(stdout).toContain("po-4: held by a live holder -> nack, retry later");
  expect(stdout).toContain("po-4: body runs (fence 2)");
  expect(stdout).toContain("every order exactly once");
});
