// A Google lock's client: the one it was given, or one it makes on first use (the constructor
// does no I/O) and then owns, closing it with the lock.

/**
 * `load` run on first use, its promise then shared; a rejection is not kept, so a failed
 * import (the driver not installed yet) is tried again by the next call.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  const forget = () => {
    pending = undefined;
  };
  return () => {
    if (pending === undefined) {
      pending = load();
      pending.catch(forget);
    }
    return pending;
  };
}

/** The client a lock was given, or the one it makes on first use and then owns. */
export class LazyClient<C> {
  private created: (() => Promise<C>) | undefined;

  constructor(
    private readonly given: C | undefined,
    private readonly create: () => Promise<C>,
  ) {}

  get(): Promise<C> {
    if (this.given !== undefined) return Promise.resolve(this.given);
    this.created ??= loadOnce(this.create);
    return this.created();
  }

  /** Ends, with `end`, a client this made; a given one stays open. The next get() makes anew. */
  async close(end: (client: C) => Promise<void>): Promise<void> {
    const created = this.created;
    if (created === undefined) return;
    this.created = undefined;
    const client = await created().catch(() => undefined);
    if (client !== undefined) await end(client);
  }
}
