import { relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";

/**
 * Ends the run with one plain line, "tests: N passed, N failed, N skipped", then a line per
 * failure (the test's full name and its error's first line), for CI logs: CI prints this tail
 * again last, so a failure is named even where only the end of its output is kept.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<unknown> = [],
  ): void {
    let passed = 0;
    let skipped = 0;
    const failures: string[] = [];
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const result = test.result();
        if (result.state === "passed") passed++;
        else if (result.state === "failed") {
          failures.push(
            `${relative(process.cwd(), module.moduleId)} > ${test.fullName}: ${firstLine(result.errors?.[0]?.message)}`,
          );
        } else skipped++;
      }
      // A file that failed to load has no tests but must still count as a failure.
      if (module.state() === "failed" && module.children.size === 0) {
        failures.push(
          `${relative(process.cwd(), module.moduleId)}: ${firstLine(module.errors()[0]?.message)}`,
        );
      }
    }
    // An unhandled error fails the run even when every test passed: count it as a failure.
    for (const error of unhandledErrors) {
      failures.push(
        `unhandled error: ${firstLine(error instanceof Error ? error.message : String(error))}`,
      );
    }
    const lines = [`tests: ${passed} passed, ${failures.length} failed, ${skipped} skipped`];
    for (const failure of failures) lines.push(`  failed: ${failure}`);
    process.stdout.write(`\n${lines.join("\n")}\n`);
  }
}

function firstLine(message: string | undefined): string {
  return (message ?? "(no message)").split("\n", 1)[0]!.slice(0, 300);
}
