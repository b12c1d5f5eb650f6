// What the run reads of the proxy's deliveries to decide it is done or stuck: which messages
// were acked, and when a message not yet acked was last pushed. The emulator sometimes never
// pushes a nacked message again; only that silence is a stall. A message still being pushed (a
// worker killed under it, a store lock it waits out) is not stranded, and an ack that came in
// the last wait before the cutoff counts.
import type { Delivery } from "./records.js";

export class DeliveryProgress {
  /** `${subscription}/${messageId}` answered 2xx. */
  readonly acked = new Set<string>();
  private seen = 0;
  private lastPushAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deliveries: readonly Delivery[]) {}

  /** Take in the deliveries recorded since the last read. */
  read(): void {
    for (; this.seen < this.deliveries.length; this.seen += 1) {
      const d = this.deliveries[this.seen] as Delivery;
      if (!d.answered) continue;
      const id = `${d.subscription}/${d.messageId}`;
      if (!this.acked.has(id)) this.lastPushAt = Math.max(this.lastPushAt, d.t);
      if (d.status >= 200 && d.status < 300) this.acked.add(id);
    }
  }

  isAcked(subscription: string, messageId: string): boolean {
    return this.acked.has(`${subscription}/${messageId}`);
  }

  /**
   * How long, as of now and counted from no earlier than since (a phase's start), no message
   * that was unacked has been answered. Reads first.
   */
  silentFor(now: number, since: number): number {
    this.read();
    return now - Math.max(since, this.lastPushAt);
  }
}
