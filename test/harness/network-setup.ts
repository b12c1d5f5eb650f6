/**
 * Vitest setup (every test worker, before each test file): no test reaches beyond loopback.
 * The guard refuses the attempt where it is made; these hooks fail the test it happened in,
 * also when the caller swallowed the refusal (as the Google libraries' metadata probe would).
 */
import { afterAll, afterEach, beforeEach } from "vitest";
import {
  configureNetworkGuard,
  describeNetworkViolations,
  takeNetworkViolations,
} from "./network-guard.mjs";

// No Google client looks for a GCE metadata server (project id, credentials): there is none,
// and looking is a connect to 169.254.169.254 and a DNS query for metadata.google.internal.
// Node processes the tests start inherit this, and the guard through NODE_OPTIONS.
process.env.METADATA_SERVER_DETECTION = "none";

// The hooks below put each refusal in the failure of its test; stderr would only repeat it.
configureNetworkGuard({ printEach: false });

function check(where: string): void {
  const violations = takeNetworkViolations();
  if (violations.length > 0) throw new Error(describeNetworkViolations(violations, where));
}

beforeEach(() => check(" before this test (at import or in a beforeAll hook)"));
afterEach(() => check(" during this test"));
afterAll(() => check(" in this file's afterAll hooks"));
