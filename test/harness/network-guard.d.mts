/** One refused attempt to reach beyond loopback. */
export interface NetworkViolation {
  /** What was tried: "connect to", "fetch of", "name lookup of", … */
  readonly what: string;
  /** The address (host:port, origin or name) it was refused for. */
  readonly target: string;
  /** The refusal's message and the stack of the call that tried. */
  readonly stack: string;
  readonly pid: number;
}

/** True for a loopback IP address (IPv4-mapped IPv6 included) and the name `localhost`. */
export function isLoopback(host: string): boolean;
/** The violations recorded since the last call, removed from the record. */
export function takeNetworkViolations(): NetworkViolation[];
/** One message for a list of violations: each attempt with its stack. */
export function describeNetworkViolations(
  violations: readonly NetworkViolation[],
  where?: string,
): string;
/**
 * How this process reports refusals besides throwing: `printEach` writes each one to stderr
 * as it happens; `exitReport` prints those not taken by takeNetworkViolations() at exit and
 * turns exit code 0 into 1. Both default to true; the vitest setup turns printEach off.
 */
export function configureNetworkGuard(options: {
  readonly printEach?: boolean;
  readonly exitReport?: boolean;
}): void;
/** Patch net, tls (through net), dns, dgram and fetch in this process; once per process. */
export function installNetworkGuard(): void;
