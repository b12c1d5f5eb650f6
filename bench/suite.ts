/**
 * What a backend brings to the suite, and the one driver of `lock()` / `mutex()` that runs
 * over every backend alike. A backend module only supplies its LockBackend(s), its floor (the
 * same round trips, raw, with the driver alone) and any peer or alternative design.
 */
import { readFileSync } from "node:fs";
import { Duplicate, InProgress, type LockBackend, lock, mutex } from "gcp-pubsub-idempotency";
import type { Op, Result, ServerCpu, Settings } from "./runner.js";

export type Path = "first" | "duplicate" | "contention" | "mutex";
export const PATHS: readonly Path[] = ["first", "duplicate", "contention", "mutex"];
export const PATH_TITLE: Record<Path, string> = {
  first: "first delivery (claim → empty body → complete)",
  duplicate: "duplicate of a completed key",
  contention: "contention on a held key",
  mutex: "mutex cycle (claim → empty body → release) on a key per worker",
};

export type Role = "ours" | "floor" | "peer" | "design";

export interface Contender {
  /** e.g. "ours/ioredis", "floor/ioredis", "powertools/@redis". */
  name: string;
  role: Role;
  ops: Partial<Record<Path, Op>>;
  /** For ours and peers: the floor contender of the same client, for the ratio. */
  floor?: string;
}

/** The contenders at one concurrency (pools are sized to it), and how to let them go. */
export interface Session {
  contenders: Contender[];
  close(): Promise<void>;
}

export interface StartedBackend {
  /** Server / driver versions for the report. */
  versions: string;
  /** What the floor is, in this backend's terms, for the report. */
  floorNote: string;
  open(concurrency: number): Promise<Session>;
  stop(): Promise<void>;
  /** The server's CPU time, for CPU per operation on its side (absent: not measured). */
  serverCpu?: ServerCpu;
}

export interface BackendBench {
  /** The name --only takes. */
  id: string;
  title: string;
  start(settings: Settings): Promise<StartedBackend>;
}

export interface BackendResult {
  id: string;
  title: string;
  versions: string;
  floorNote: string;
  loadAtStart: string;
  seconds: number;
  /** Whether server CPU per operation was measured (the process is visible in /proc). */
  serverCpu: boolean;
  /** In order of first appearance. */
  contenders: Array<{ name: string; role: Role; floor?: string }>;
  /** `${path}|${concurrency}|${contender}` */
  cells: Map<string, Result>;
  error?: string;
}

export const cellKey = (path: Path, concurrency: number, contender: string) =>
  `${path}|${concurrency}|${contender}`;

/** A lease no cell outlives: the held key stays held, a won claim never lapses mid-run. */
export const LEASE_MS = 60 * 60_000;
export const TTL_MS = 24 * 60 * 60_000;

/** The keys every contender of a backend shares, so a floor touches the rows ours made. */
export const KEYS = {
  first: (tag: string, i: number) => `${tag}:f:${i}`,
  dup: (i: number, settings: Settings) => `dup:${i % settings.dupKeys}`,
  held: "held",
  mutex: (tag: string, worker: number) => `${tag}:m:${worker}`,
};

const body = () => undefined;

/** A rejection that must be `kind`, so a wrong outcome stops the run instead of timing it. */
export function expectRejection(
  promise: Promise<unknown>,
  kind: abstract new (...args: never[]) => Error,
): Promise<void> {
  return promise.then(
    () => {
      throw new Error(`bench sanity check: expected ${kind.name}, the body ran`);
    },
    (error: unknown) => {
      if (!(error instanceof kind)) throw error;
    },
  );
}

export function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`bench sanity check failed: ${what}`);
}

/** lock() / mutex() over one backend: the same four paths for every store. */
export function oursContender(
  name: string,
  backend: LockBackend,
  settings: Settings,
  floor: string,
): Contender {
  const options = { backend, leaseMs: LEASE_MS };
  return {
    name,
    role: "ours",
    floor,
    ops: {
      first: (i) => lock(KEYS.first(name, i), options, body),
      duplicate: (i) => expectRejection(lock(KEYS.dup(i, settings), options, body), Duplicate),
      contention: () => expectRejection(lock(KEYS.held, options, body), InProgress),
      mutex: (_i, w) => mutex(KEYS.mutex(name, w), options, body),
    },
  };
}

/**
 * The done keys and the held key, written once through the backend itself. Several
 * backends over one store (ioredis and @redis on one prefix) seed it only once.
 */
export async function seed(
  backend: LockBackend,
  settings: Settings,
  /** Seeding calls at once; 1 for a store that serializes writers (the Spanner emulator). */
  inFlight = 32,
): Promise<void> {
  const options = { backend, leaseMs: LEASE_MS };
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < settings.dupKeys; i++) {
    pending.push(
      lock(KEYS.dup(i, settings), options, body).catch((error: unknown) => {
        if (!(error instanceof Duplicate)) throw error;
      }),
    );
    if (pending.length >= inFlight) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
  const held = await backend.claim(KEYS.held, LEASE_MS);
  check(held.status === "won" || held.status === "held", "the held key is held");
}

export function version(name: string): string {
  try {
    const path = new URL(`../node_modules/${name}/package.json`, import.meta.url);
    return (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version;
  } catch {
    return "?";
  }
}

/** A name unique to this run, for prefixes, databases, namespaces. */
export const RUN_ID = `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
