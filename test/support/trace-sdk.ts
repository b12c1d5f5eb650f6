// Which OpenTelemetry trace SDK this install tree has: the lock file's tree has 2.x's
// @opentelemetry/sdk-trace-base, the newest majors' tree (npm run test:newest) only 3.x's
// @opentelemetry/sdk-trace. vitest.config.ts and the docs test decide by it.
import { createRequire } from "node:module";

export const hasSdkTraceBase: boolean = (() => {
  try {
    createRequire(import.meta.url).resolve("@opentelemetry/sdk-trace-base");
    return true;
  } catch {
    return false;
  }
})();
