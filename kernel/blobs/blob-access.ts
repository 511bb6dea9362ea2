import type { Queryable } from '../db/database.ts';
import { isUuid } from '../http/validate.ts';
import { findBlob, type BlobMetadata } from './blob-store.ts';

/**
 * The blob `id` if plugin `plugin` may reach it while serving `companyId`: the blob belongs to
 * that company and the plugin owns it or was handed it (blob_links). Anything else (another
 * company's blob, another plugin's, a kernel asset, an id that names nothing, a malformed id)
 * is undefined alike, so that a guessed id tells nothing.
 */
export async function blobForPlugin(db: Queryable, plugin: string, companyId: string, id: unknown): Promise<(BlobMetadata & { owned: boolean }) | undefined> {
  if (!isUuid(id)) return undefined;
  const row = await db.maybeOne<{ id: string }>(
    `select b.id from blobs b where b.id = ? and b.company_id = ?
       and (b.owner = ? or exists (select 1 from blob_links l where l.blob_id = b.id and l.plugin_key = ?))`,
    [id.toLowerCase(), companyId, plugin, plugin]);
  if (!row) return undefined;
  const blob = await findBlob(db, row.id);
  return blob ? { ...blob, owned: blob.owner === plugin } : undefined;
}
