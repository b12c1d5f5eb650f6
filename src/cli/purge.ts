// `purge`: delete the records past their expiry, in the backend's batches, with a running count.
import { COMMON_OPTIONS, type Command, EXIT, flag } from "./args.js";
import { readLine } from "./inspect.js";
import { type CliIo, formatSpan, writeJson } from "./output.js";
import { openStore } from "./store/open.js";
import { STORE_OPTIONS, storeSpecOf } from "./store/url.js";

/** Redis needs no purge: every write sets PEXPIREAT at the record's expiry. */
const SELF_EXPIRING =
  "the store deletes each record at its expiry itself (Redis PEXPIREAT): nothing to purge";

export const purgeCommand: Command = {
  spec: {
    name: "purge",
    options: [...STORE_OPTIONS, ...COMMON_OPTIONS],
    positional: "argument",
    minPositionals: 0,
    maxPositionals: 0,
  },
  summary: "delete the records past their expiry, with a running count",
  usage: "",
  description:
    "Deletes every record past its expiry, batch by batch, each record judged again before it\n" +
    "goes (a record reclaimed meanwhile stays). Shows the running count on a terminal and the\n" +
    "total at the end. Redis needs none: it deletes each record at its expiry itself. Safe to\n" +
    "run while deliveries go on.",
  async run(args, io) {
    const json = flag(args, "--json");
    const store = await openStore(storeSpecOf(args, io.env), args);
    try {
      const { backend } = store;
      const purge = backend.purgeExpired?.bind(backend);
      if (purge === undefined) {
        if (json) {
          writeJson(io, {
            backend: store.description,
            read: store.reads,
            deleted: 0,
            note: SELF_EXPIRING,
          });
        } else io.out(`${readLine(store)}\n${SELF_EXPIRING}\n`);
        return EXIT.ok;
      }
      if (!json) io.out(`${readLine(store)}\n`);
      const started = Date.now();
      const progress = !json && io.errIsTerminal ? progressLine(io) : undefined;
      let deleted: number;
      try {
        deleted = await purge(progress === undefined ? {} : { onProgress: progress.update });
      } finally {
        progress?.end();
      }
      const elapsedMs = Date.now() - started;
      if (json)
        writeJson(io, { backend: store.description, read: store.reads, deleted, elapsedMs });
      else {
        io.out(
          `deleted ${deleted.toLocaleString("en-US")} expired records in ${formatSpan(elapsedMs)}\n`,
        );
      }
      return EXIT.ok;
    } finally {
      await store.close();
    }
  },
};

/**
 * A line on the terminal that shows how many records are gone and how fast. No bar: no store
 * says how many records have expired without counting them, which costs a scan of its own.
 */
function progressLine(io: CliIo) {
  const started = Date.now();
  const spinner = ["|", "/", "-", "\\"];
  let ticks = 0;
  return {
    update: (deleted: number) => {
      const seconds = Math.max((Date.now() - started) / 1_000, 0.001);
      const rate = Math.round(deleted / seconds).toLocaleString("en-US");
      io.err(
        `\r${spinner[ticks++ % spinner.length]} purging: ${deleted.toLocaleString("en-US")} deleted (${rate}/s)   `,
      );
    },
    end: () => {
      if (ticks > 0) io.err("\r\x1b[K");
    },
  };
}
