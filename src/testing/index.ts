export { createFakeClock, type FakeClock } from "./clock.js";
export { type BackendContractTarget, describeBackendContract } from "./contract.js";
export * from "./push-simulator.js";
