// What a command opened: the backend, and what it reads (store, place, prefix or table), as
// the first line of the text output and the `read` field of --json.
import type { LockBackend } from "../../core/port.js";
import { shownKey } from "../output.js";
import type { StoreKind } from "./url.js";

/**
 * What a command read: the store, where it is, and the prefix, table, kind or collection the
 * records are under; `--json` writes it as the `read` field.
 */
export interface StoreReads {
  readonly store: StoreKind;
  /** host:port (and database), a file, or a Spanner database; absent for Datastore and Firestore. */
  readonly at?: string;
  readonly project?: string;
  readonly database?: string;
  readonly prefix?: string;
  readonly table?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly collection?: string;
}

/** `redis 127.0.0.1:6379, prefix idem:`: what was read, as the first line of the text output. */
export function readsText(reads: StoreReads): string {
  const parts: string[] = [];
  const put = (label: string, value: string | undefined) => {
    if (value !== undefined) parts.push(`${label} ${shownKey(value)}`);
  };
  put("prefix", reads.prefix);
  put("table", reads.table);
  put("kind", reads.kind);
  put("namespace", reads.namespace);
  put("collection", reads.collection);
  put("project", reads.project);
  put("database", reads.database);
  const head = reads.at === undefined ? reads.store : `${reads.store} ${reads.at}`;
  return [head, ...parts].join(", ");
}

/** An open store: the backend, what it reads, and how to let go of it. */
export interface OpenStore {
  readonly backend: LockBackend;
  readonly reads: StoreReads;
  /** {@link readsText} of `reads`: `redis 127.0.0.1:6379, prefix idem:`. */
  readonly description: string;
  close(): Promise<void>;
}

export function opened(
  backend: LockBackend,
  reads: StoreReads,
  close: () => Promise<void>,
): OpenStore {
  return { backend, reads, description: readsText(reads), close };
}
