// `inspect KEY...`: each key's record as the store holds it, judged by the store's own clock.

import type { InspectedRecord, LockBackend } from "../core/port.js";
import { assertValidKey } from "../core/validate.js";
import { COMMON_OPTIONS, type Command, EXIT, flag } from "./args.js";
import { type CliIo, formatMoment, shownKey, table, writeJson } from "./output.js";
import { openStore } from "./store/open.js";
import type { OpenStore } from "./store/reads.js";
import { STORE_OPTIONS, storeSpecOf } from "./store/url.js";

/** The first line of a command's text output: the store, and the prefix or table it read. */
export function readLine(store: OpenStore): string {
  return `read ${store.description}`;
}

/**
 * What a record means now: `held` (a live lease), `lapsed` (the lease ended: the next claim
 * takes the key), `done` (a duplicate until its expiry), `expired` (past its expiry, counts as
 * absent until deleted), `absent`.
 */
export type RecordStatus = "held" | "lapsed" | "done" | "expired" | "absent";

export function statusOf(record: InspectedRecord | undefined): RecordStatus {
  if (record === undefined) return "absent";
  if (record.now >= record.expiresAt) return "expired";
  if (record.state === "done") return "done";
  return record.now < record.leaseExpiresAt ? "held" : "lapsed";
}

const MEANING: Readonly<Record<RecordStatus, string>> = {
  held: "a live claim: a delivery of this key now answers InProgress",
  lapsed: "the holder's lease ended: the next claim takes the key at fence + 1",
  done: "completed: a delivery of this key now is a duplicate",
  expired: "past its expiry: counts as absent until the store deletes it",
  absent:
    "no record here; a wrong --prefix, --table, --kind or --record-ids reads as absent too. The next claim takes the key at a new fence, above any it had",
};

/** The record and its status as `--json` writes them: the port's fields, times in epoch ms. */
export function recordJson(key: string, record: InspectedRecord | undefined) {
  return record === undefined
    ? { key, status: statusOf(record) }
    : { ...record, status: statusOf(record) };
}

/** The record as text, every time shown against the store's clock. */
export function recordText(key: string, record: InspectedRecord | undefined): string {
  const status = statusOf(record);
  const rows: Array<[string, string]> = [
    ["key", shownKey(key)],
    ["status", `${status} (${MEANING[status]})`],
  ];
  if (record !== undefined) {
    rows.push(
      ["state", record.state],
      ["fencing id", String(record.fencingId)],
      ["lease end", formatMoment(record.leaseExpiresAt, record.now)],
      ["expiry", formatMoment(record.expiresAt, record.now)],
      ["store time", new Date(record.now).toISOString()],
    );
    if (record.fingerprint !== undefined) rows.push(["fingerprint", shownText(record.fingerprint)]);
    if (record.result !== undefined) rows.push(["result", shownResult(record.result)]);
  }
  return table(rows);
}

/** At most 200 characters of a stored text, as JSON, so a control character cannot hide. */
function shownText(text: string): string {
  const shown = JSON.stringify(text.length > 200 ? text.slice(0, 200) : text);
  return text.length > 200 ? `${shown}… (${text.length} characters)` : shown;
}

/** once()'s record of a result: its marker read ("r:" a value, "u:" undefined, "n:" none). */
function shownResult(text: string): string {
  if (text === "u:") return "undefined (recorded by once())";
  if (text.startsWith("n:")) return `none recorded: ${shownText(text.slice(2))}`;
  return shownText(text.startsWith("r:") ? text.slice(2) : text);
}

/** The backend's inspect, or an Error saying this backend cannot be inspected. */
export function inspector(
  backend: LockBackend,
): (key: string) => Promise<InspectedRecord | undefined> {
  const inspect = backend.inspect?.bind(backend);
  if (inspect === undefined) throw new Error("this backend has no inspect()");
  return inspect;
}

export const inspectCommand: Command = {
  spec: {
    name: "inspect",
    options: [...STORE_OPTIONS, ...COMMON_OPTIONS],
    positional: "KEY",
    minPositionals: 1,
    maxPositionals: 1_000,
  },
  summary: "show each key's record: state, fencing id, lease end and expiry, in the store's clock",
  usage: "KEY...",
  description:
    "Reads the record of each KEY and shows its state, fencing id, lease end and expiry,\n" +
    "judged by the store's own clock (Redis TIME, the SQL server's now(), Spanner's commit\n" +
    "timestamp; this machine's clock for Datastore and Firestore). Writes nothing. Put --\n" +
    "before keys that begin with -.",
  async run(args, io: CliIo) {
    const keys = args.positionals;
    for (const key of keys) assertValidKey(key);
    const store = await openStore(storeSpecOf(args, io.env), args);
    try {
      const inspect = inspector(store.backend);
      const records: Array<[string, InspectedRecord | undefined]> = [];
      for (const key of keys) records.push([key, await inspect(key)]);
      if (flag(args, "--json")) {
        writeJson(io, {
          backend: store.description,
          read: store.reads,
          records: records.map(([key, record]) => recordJson(key, record)),
        });
      } else {
        io.out(`${readLine(store)}\n\n`);
        io.out(records.map(([key, record]) => recordText(key, record)).join("\n"));
      }
      return EXIT.ok;
    } finally {
      await store.close();
    }
  },
};
