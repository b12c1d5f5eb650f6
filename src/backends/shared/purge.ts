/** What one purge batch did: records its query found expired, and how many it deleted. */
export interface PurgeBatch {
  readonly found: number;
  readonly deleted: number;
}

/**
 * Run `batch` until a batch comes back short of `batchSize`, or deletes nothing (every record
 * it found was reclaimed meanwhile: asking again would find the same ones for ever).
 * Resolves to the number deleted in all; `onProgress` hears the running count after each batch.
 */
export async function purgeInBatches(
  batchSize: number,
  batch: () => Promise<PurgeBatch>,
  onProgress?: (deleted: number) => void,
): Promise<number> {
  let removed = 0;
  for (;;) {
    const { found, deleted } = await batch();
    removed += deleted;
    onProgress?.(removed);
    if (found < batchSize || deleted === 0) return removed;
  }
}
