// What the run reads of the proxy's deliveries to decide it is done or stuck: which messages
// were acked, and when a phase last made progress. Progress is an ack of one of the phase's
// messages, or a push to one still unacked that came back 502: the worker died under it (the
// harness kills workers) or refused it, which says nothing about the library. A push a live
// worker answered with a nack is not progress, so a message the library keeps refusing still
// stalls the run after STALL_MS, as does one the emulator stopped pushing. Deliveries are read
// before every decision: an ack that came during the run's last wait counts.
import type { Delivery } from "./records.js";

/** The proxy's status for a push whose worker died under it or refused the connection. */
const WORKER_GONE = 502;

export class DeliveryProgress {
  /** `${subscription}/${messageId}` answered 2xx. */
  readonly acked = new Set<string>();
  /** When each message last made progress (its ack, or a push its worker died under). */
  private readonly progressAt = new Map<string, number>();
  private seen = 0;

  constructor(private readonly deliveries: readonly Delivery[]) {}

  /** Take in the deliveries recorded since the last read. */
  read(): void {
    for (; this.seen < this.deliveries.length; this.seen += 1) {
      const d = this.deliveries[this.seen] as Delivery;
      if (!d.answered) continue;
      const id = `${d.subscription}/${d.messageId}`;
      if (this.acked.has(id)) continue;
      const acked = d.status >= 200 && d.status < 300;
      if (acked) this.acked.add(id);
      if (acked || d.status === WORKER_GONE)
        this.progressAt.set(id, Math.max(this.progressAt.get(id) ?? 0, d.t));
    }
  }

  isAcked(subscription: string, messageId: string): boolean {
    return this.acked.has(`${subscription}/${messageId}`);
  }

  /**
   * How long, as of now, a phase whose messages are `ids` (`${subscription}/${messageId}`) has
   * made no progress, counted from no earlier than since (the phase's start). Reads first.
   */
  silentFor(now: number, since: number, ids: Iterable<string>): number {
    this.read();
    let last = since;
    for (const id of ids) last = Math.max(last, this.progressAt.get(id) ?? 0);
    return now - last;
  }
}
