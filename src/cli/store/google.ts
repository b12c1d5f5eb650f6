// Opening the datastore, firestore and spanner stores: the lock makes its own client on first
// use (ADC, or the emulator host in the environment), so nothing connects here.
import { RECORD_ID_LAYOUTS, type RecordIdLayout } from "../../backends/google/record-ids.js";
import { shown, UsageError } from "../args.js";
import { defined, type OptionText, type Ttl } from "./connect.js";
import { type OpenStore, opened } from "./reads.js";
import type { SpecOf } from "./url.js";

export async function openDatastore(
  spec: SpecOf<"datastore">,
  option: OptionText,
  ttl: Ttl,
): Promise<OpenStore> {
  const { DatastoreLock } = await import("../../backends/datastore/index.js");
  const backend = new DatastoreLock({
    ...defined({ namespace: spec.namespace, kind: option("--kind") }),
    ...googleSettings(option),
    ...ttl,
  });
  return opened(
    backend,
    {
      store: "datastore",
      kind: backend.kind,
      namespace: spec.namespace ?? "(default)",
      ...googleSettingsShown(option),
    },
    () => backend.close(),
  );
}

export async function openFirestore(
  spec: SpecOf<"firestore">,
  option: OptionText,
  ttl: Ttl,
): Promise<OpenStore> {
  const { FirestoreLock } = await import("../../backends/firestore/index.js");
  const backend = new FirestoreLock({
    ...defined({ collection: spec.collection }),
    ...googleSettings(option),
    ...ttl,
  });
  return opened(
    backend,
    { store: "firestore", collection: backend.collection, ...googleSettingsShown(option) },
    () => backend.close(),
  );
}

export async function openSpanner(
  spec: SpecOf<"spanner">,
  option: OptionText,
  ttl: Ttl,
): Promise<OpenStore> {
  const { SpannerLock } = await import("../../backends/spanner/index.js");
  const { kind: _, ...ids } = spec;
  const backend = new SpannerLock({
    ...defined({ ...ids, table: option("--table") }),
    ...recordIds(option),
    ...ttl,
  });
  const at = `${spec.projectId === undefined ? "" : `projects/${spec.projectId}/`}instances/${spec.instanceId}/databases/${spec.databaseId}`;
  return opened(backend, { store: "spanner", at, table: backend.table }, () => backend.close());
}

/** The project, database and record ids given on the command line, as the lock's options. */
function googleSettings(option: OptionText) {
  return {
    ...defined({ projectId: option("--project"), databaseId: option("--database") }),
    ...recordIds(option),
  };
}

/** `--record-ids`: the service's recordIds, so the command reads the ids the service writes. */
function recordIds(option: OptionText): { recordIds?: RecordIdLayout } {
  const given = option("--record-ids");
  if (given === undefined) return {};
  if (!(RECORD_ID_LAYOUTS as readonly string[]).includes(given)) {
    throw new UsageError(
      `--record-ids must be ${RECORD_ID_LAYOUTS.join(", ")} (the lock's recordIds), got ${shown(given)}`,
    );
  }
  return { recordIds: given as RecordIdLayout };
}

/** The project and database given on the command line, for what a command read. */
function googleSettingsShown(option: OptionText) {
  return defined({ project: option("--project"), database: option("--database") });
}
