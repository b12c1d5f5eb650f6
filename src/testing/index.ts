/**
 * For tests: the backend contract suite, a fake clock, a backend warm-up and a Pub/Sub push
 * simulator. Needs vitest.
 *
 * @module gcp-pubsub-idempotency/testing
 */
export { createFakeClock, type FakeClock } from "./clock.js";
export { type BackendContractTarget, describeBackendContract } from "./contract.js";
export * from "./push-simulator.js";
export { type WarmUpOptions, type WarmUpReport, warmUpBackend } from "./warm-up.js";
