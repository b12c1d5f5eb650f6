import { describe, expect, it } from "vitest";
import { GRPC, isGoogleTransient } from "../../src/backends/google/grpc.js";

const error = (code: number, message: string) => Object.assign(new Error(message), { code });

describe("isGoogleTransient: which driver errors the Google backends retry", () => {
  it("retries contention, an unreachable server and the emulator's lock timeout", () => {
    expect(isGoogleTransient(error(GRPC.ABORTED, "10 ABORTED: Transaction was aborted."))).toBe(
      true,
    );
    expect(isGoogleTransient(error(GRPC.UNAVAILABLE, "14 UNAVAILABLE: No connection"))).toBe(true);
    expect(isGoogleTransient(error(GRPC.DEADLINE_EXCEEDED, "4 DEADLINE_EXCEEDED"))).toBe(true);
    expect(isGoogleTransient(error(2, "2 UNKNOWN: lock timeout on key"))).toBe(true);
  });

  it("retries a transaction the server no longer knows (Spanner 9's emulator under contention)", () => {
    expect(
      isGoogleTransient(error(GRPC.NOT_FOUND, "5 NOT_FOUND: Transaction not found: 200")),
    ).toBe(true);
    const behind = "9 FAILED_PRECONDITION: Invalid transaction ID. Transaction ID must be >= 508";
    expect(isGoogleTransient(error(GRPC.FAILED_PRECONDITION, behind))).toBe(true);
  });

  it("does not retry any other NOT_FOUND, a refusal, or what is not a driver error", () => {
    expect(isGoogleTransient(error(GRPC.NOT_FOUND, "5 NOT_FOUND: No document to update"))).toBe(
      false,
    );
    expect(isGoogleTransient(error(GRPC.NOT_FOUND, "5 NOT_FOUND: Table not found: records"))).toBe(
      false,
    );
    expect(isGoogleTransient(error(GRPC.FAILED_PRECONDITION, "9 FAILED_PRECONDITION"))).toBe(false);
    expect(isGoogleTransient(error(GRPC.ALREADY_EXISTS, "6 ALREADY_EXISTS"))).toBe(false);
    expect(isGoogleTransient(error(GRPC.INVALID_ARGUMENT, "3 INVALID_ARGUMENT"))).toBe(false);
    expect(isGoogleTransient(new Error("transaction not found"))).toBe(false);
    expect(isGoogleTransient(null)).toBe(false);
    expect(isGoogleTransient("Transaction not found")).toBe(false);
  });
});
