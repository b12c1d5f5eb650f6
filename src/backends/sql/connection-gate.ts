// On a single connection (a better-sqlite3 Database, a pg Client, a mysql2 Connection) every
// statement sent while a transaction is open runs inside it, and commits or rolls back with
// it. SqlLock therefore keeps its statements and its transactions apart on such a connection.

/**
 * A readers-writer gate per connection: statements run together (the driver queues them in
 * order), a transaction runs alone. A transaction waits for the statements in flight; a
 * statement waits while a transaction is open or waiting, so none slips into one.
 */
export class ConnectionGate {
  private statements = 0;
  private transactions = 0;
  private transactionOpen = false;
  private change: Promise<void> | undefined;
  private notify: (() => void) | undefined;

  /** Run `statement` (one or a few statements of one verb) outside any transaction. */
  async statement<T>(statement: () => Promise<T>): Promise<T> {
    while (this.transactions > 0) await this.nextChange();
    this.statements++;
    try {
      return await statement();
    } finally {
      this.statements--;
      this.changed();
    }
  }

  /** Run `transaction` alone on the connection: after the statements in flight, before new ones. */
  async transaction<T>(transaction: () => Promise<T>): Promise<T> {
    this.transactions++;
    try {
      while (this.transactionOpen || this.statements > 0) await this.nextChange();
      this.transactionOpen = true;
      try {
        return await transaction();
      } finally {
        this.transactionOpen = false;
      }
    } finally {
      this.transactions--;
      this.changed();
    }
  }

  private nextChange(): Promise<void> {
    this.change ??= new Promise((resolve) => {
      this.notify = resolve;
    });
    return this.change;
  }

  private changed(): void {
    const notify = this.notify;
    this.change = undefined;
    this.notify = undefined;
    notify?.();
  }
}

/** One gate per connection object, shared by every SqlLock on it (other tables included). */
const gates = new WeakMap<object, ConnectionGate>();

export function gateFor(connection: object): ConnectionGate {
  let gate = gates.get(connection);
  if (gate === undefined) {
    gate = new ConnectionGate();
    gates.set(connection, gate);
  }
  return gate;
}
