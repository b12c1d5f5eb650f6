/**
 * For tests: the backend contract suite, a fake clock, a backend warm-up, message builders,
 * a Pub/Sub push simulator and test identities that sign push tokens. Loads no test runner:
 * the contract suite takes the runner's `describe`, `it` and `beforeAll` (vitest users can
 * import `/testing/vitest` instead).
 *
 * @module gcp-pubsub-idempotency/testing
 */
export { createFakeClock, type FakeClock } from "./clock.js";
export { describeBackendContract } from "./contract.js";
export { type NodeTestFunctions, nodeTestRunner, type TestRunner } from "./contract-runner.js";
export type { BackendContractTarget } from "./contract-target.js";
export type { TransactionalContractTarget } from "./contract-transactions.js";
export {
  type BinaryCloudEvent,
  binaryCloudEvent,
  type FakeMessage,
  fakeMessage,
  type MessageFields,
  nextMessageId,
  type Payload,
  type PushBody,
  type PushBodyMessage,
  payloadBytes,
  pushBody,
  type StructuredCloudEvent,
  structuredCloudEvent,
} from "./messages.js";
export {
  createTestIdentity,
  FORGED_PUSH_AUTH_STATUS,
  type ForgedPushAuthKind,
  type TestIdentity,
  type TestIdentityOptions,
  type TestTokenClaims,
  type TestTokenHeader,
} from "./push-auth.js";
export {
  type CloudEventFields,
  cloudEventRequest,
  type PushFormat,
  type PushHttpRequest,
  pushRequest,
} from "./push-requests.js";
export {
  type MessageReport,
  type RequestListener,
  type SimulateOptions,
  type SimulationReport,
  simulatePushDeliveries,
} from "./push-simulator.js";
export { type WarmUpOptions, type WarmUpReport, warmUpBackend } from "./warm-up.js";
