/**
 * For tests: the backend contract suite, a fake clock, a backend warm-up, message builders and
 * a Pub/Sub push simulator. Loads no test runner: the contract suite takes the runner's
 * `describe`, `it` and `beforeAll` (vitest users can import `/testing/vitest` instead).
 *
 * @module gcp-pubsub-idempotency/testing
 */
export { createFakeClock, type FakeClock } from "./clock.js";
export {
  type BackendContractTarget,
  describeBackendContract,
  type NodeTestFunctions,
  nodeTestRunner,
  type TestRunner,
} from "./contract.js";
export * from "./push-simulator.js";
export { type WarmUpOptions, type WarmUpReport, warmUpBackend } from "./warm-up.js";
