// The gRPC status codes the Google drivers reject with, and what each lock makes of them: a
// refused conditional write, or a transient failure worth another attempt.

/** The gRPC status codes the drivers reject with that we act on. */
export const GRPC = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  UNAVAILABLE: 14,
} as const;

/** The gRPC status code of a driver error, if it has one. */
export function grpcCode(error: unknown): unknown {
  return error !== null && typeof error === "object"
    ? (error as { code?: unknown }).code
    : undefined;
}

/**
 * Run a conditional write: true when it landed, false when the store refused it with one of
 * `refusals` (its condition did not hold: someone wrote first); any other error is rethrown.
 */
export async function conditionalWrite(
  refusals: readonly number[],
  write: () => Promise<unknown>,
): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (error) {
    if (refusals.includes(grpcCode(error) as number)) return false;
    throw error;
  }
}

/**
 * gRPC channel options for a client a lock makes itself: a keepalive ping while calls are
 * pending, so a connection that died silently (a partition that cost it, a NAT or load
 * balancer that forgot it: no FIN, no RST) is noticed and replaced. Without them the channel
 * kept the dead connection for good: every later call ended in DEADLINE_EXCEEDED after 60 s
 * (test/faults/severed-connections.test.ts, severed-firestore.test.ts). A minute apart, as Google's own clients ping
 * (Spanner every 2 minutes, Pub/Sub every 5), so the servers never take it as abuse.
 */
export const KEEPALIVE_SETTINGS: Readonly<Record<string, number>> = {
  "grpc.keepalive_time_ms": 60_000,
  "grpc.keepalive_timeout_ms": 20_000,
};

const TRANSIENT_CODES = new Set<unknown>([GRPC.ABORTED, GRPC.UNAVAILABLE, GRPC.DEADLINE_EXCEEDED]);

/**
 * Transient: contention (ABORTED), an unreachable server, the emulator's lock timeout, or a
 * transaction the server no longer knows or will not begin (NOT_FOUND "Transaction not found",
 * FAILED_PRECONDITION "Invalid transaction ID": the Spanner emulator's answers, with
 * @google-cloud/spanner 9's multiplexed sessions, to a transaction it aborted for a concurrent
 * one, or begun behind one). Each is retried from the read; a claim whose commit did land
 * before the answer was lost is recognised there by its token.
 */
export function isGoogleTransient(error: unknown): boolean {
  const code = grpcCode(error);
  if (TRANSIENT_CODES.has(code)) return true;
  const message = error !== null && typeof error === "object" ? (error as Error).message : "";
  if (typeof message !== "string") return false;
  if (code === GRPC.NOT_FOUND) return /transaction not found/i.test(message);
  if (code === GRPC.FAILED_PRECONDITION) return /invalid transaction id/i.test(message);
  return /lock timeout|too much contention/i.test(message);
}
