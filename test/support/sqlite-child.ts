// A second OS process for the SQLite race: claims every key it is told to once, on `go`.
import Database from "better-sqlite3";
import { SqlLock } from "../../src/backends/sql/index.js";

const [file, table, count] = process.argv.slice(2);
const db = new Database(file as string);
const backend = new SqlLock({ client: db, table: table as string, ttlMs: 60_000 });

process.on("message", async (message: { keys: string[]; startAt: number }) => {
  // Both processes start at one agreed instant, so their claims really interleave.
  while (Date.now() < message.startAt) await new Promise((done) => setTimeout(done, 1));
  const statuses: string[] = [];
  for (const key of message.keys) {
    statuses.push((await backend.claim(key, 60_000)).status);
    // Yield between claims so the other process gets the write lock in between.
    await new Promise((done) => setImmediate(done));
  }
  process.send?.({ statuses, count: Number(count) });
  db.close();
  process.disconnect();
});
process.send?.({ ready: true });
