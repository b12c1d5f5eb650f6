// The times the Google stores stamp their answers with, as epoch ms with their sub-ms part:
// a Firestore Timestamp (readTime, writeTime), a protobuf Timestamp (Datastore's commitTime),
// a Date.

/** Epoch ms of a store timestamp, fractions kept; undefined for anything else. */
export function storeMillis(time: unknown): number | undefined {
  if (time instanceof Date) return finite(time.getTime());
  if (time === null || typeof time !== "object") return undefined;
  const stamp = time as { seconds?: unknown; nanoseconds?: unknown; nanos?: unknown };
  const seconds = Number(stamp.seconds);
  const nanos = Number(stamp.nanoseconds ?? stamp.nanos ?? 0);
  return finite(seconds * 1000 + nanos / 1e6);
}

function finite(ms: number): number | undefined {
  return Number.isFinite(ms) ? ms : undefined;
}
