// `release KEY`: free a stuck claim. Shows the record, asks, then force-releases it at the fence
// shown, so a claim that moved on in between is left alone; a done record is never released.
import { DEFAULT_TTL_MS } from "../core/constants.js";
import type { ForceReleaseOutcome, InspectedRecord } from "../core/port.js";
import { assertValidKey } from "../core/validate.js";
import {
  COMMON_OPTIONS,
  type Command,
  EXIT,
  flag,
  optionText,
  parseDuration,
  UsageError,
} from "./args.js";
import { inspector, readLine, recordJson, recordText, statusOf } from "./inspect.js";
import { type CliIo, shownKey, writeJson } from "./output.js";
import { openStore } from "./store/open.js";
import type { OpenStore } from "./store/reads.js";
import { STORE_OPTIONS, storeSpecOf } from "./store/url.js";

export const releaseCommand: Command = {
  spec: {
    name: "release",
    options: [
      ...STORE_OPTIONS,
      {
        name: "--ttl",
        value: "DURATION",
        help: "the released record lives this long (your backend's ttl; default 1h)",
      },
      { name: "--yes", help: "release without asking" },
      ...COMMON_OPTIONS,
    ],
    positional: "KEY",
    minPositionals: 1,
    maxPositionals: 1,
  },
  summary: "free a stuck claim: advance its fence and end its lease (asks first)",
  usage: "KEY",
  description:
    "Frees the claim of KEY when its holder is stuck: the fence rises and the lease ends now,\n" +
    "so the next delivery takes the key at once (at fence + 2), and the old holder, should it\n" +
    "still run, is fenced out: its complete fails, and the work it did may run again. Shows the\n" +
    "record and asks first unless --yes; releases only the claim it showed (a claim that moved\n" +
    "on meanwhile is left alone). A done record is never released.",
  async run(args, io) {
    const [key] = args.positionals as [string];
    assertValidKey(key);
    const ttlText = optionText(args, "--ttl");
    const ttlMs = ttlText === undefined ? DEFAULT_TTL_MS : parseDuration("--ttl", ttlText);
    const json = flag(args, "--json");
    const confirmed = flag(args, "--yes");
    if (!confirmed && !io.inIsTerminal) {
      throw new UsageError(
        "release asks before it frees a claim, and stdin is no terminal: pass --yes",
      );
    }
    const store = await openStore(storeSpecOf(args, io.env), args, { ttlMs });
    try {
      const { backend } = store;
      const before = await inspector(backend)(key);
      const status = statusOf(before);
      if (!json) io.out(`${readLine(store)}\n\n${recordText(key, before)}`);
      if (before === undefined || status === "expired" || status === "done") {
        const why =
          status === "done"
            ? "it is done: a done key is never released (it stays a duplicate until its expiry)"
            : "there is no live record to free";
        return answer(io, store, json, key, before, undefined, `not released: ${why}`, EXIT.no);
      }
      if (!confirmed && !(await confirm(io, key, before))) {
        return answer(
          io,
          store,
          json,
          key,
          before,
          undefined,
          "not released: not confirmed",
          EXIT.no,
        );
      }
      const forceRelease = backend.forceRelease?.bind(backend);
      if (forceRelease === undefined) throw new Error("this backend has no forceRelease()");
      const outcome = await forceRelease(key, before.fencingId);
      return answer(
        io,
        store,
        json,
        key,
        before,
        outcome,
        outcomeText(key, before, outcome),
        outcomeExit(outcome),
      );
    } finally {
      await store.close();
    }
  },
};

async function confirm(io: CliIo, key: string, record: InspectedRecord): Promise<boolean> {
  const reply = await io.ask(
    `Release ${shownKey(key)} at fence ${record.fencingId}? A holder that still runs will be fenced out. [y/N] `,
  );
  return reply !== undefined && /^\s*y(es)?\s*$/i.test(reply);
}

function outcomeText(key: string, before: InspectedRecord, outcome: ForceReleaseOutcome): string {
  switch (outcome.status) {
    case "released":
      return `released ${shownKey(key)}: fence ${before.fencingId} → ${outcome.fencingId}; the next claim takes it at fence ${outcome.fencingId + 1}`;
    case "changed":
      return `not released: the claim moved on since it was read (fence ${before.fencingId} → ${outcome.fencingId}); inspect it again`;
    case "done":
      return "not released: it completed since it was read";
    case "absent":
      return "not released: the record expired or was deleted since it was read";
  }
}

function outcomeExit(outcome: ForceReleaseOutcome): number {
  return outcome.status === "released" ? EXIT.ok : EXIT.no;
}

function answer(
  io: CliIo,
  store: OpenStore,
  json: boolean,
  key: string,
  before: InspectedRecord | undefined,
  outcome: ForceReleaseOutcome | undefined,
  text: string,
  exit: number,
): number {
  if (json) {
    writeJson(io, {
      backend: store.description,
      read: store.reads,
      key,
      released: outcome?.status === "released",
      before: recordJson(key, before),
      ...(outcome === undefined ? {} : { outcome }),
      message: text,
    });
  } else {
    io.out(`\n${text}\n`);
  }
  return exit;
}
