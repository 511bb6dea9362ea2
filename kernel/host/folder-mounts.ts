import type { Database } from '../db/database.ts';
import type { ExtensionHost, LoadedPlugin } from './extension-host.ts';
import type { FolderMount, InvokeMessage } from './protocol/messages.ts';

/**
 * Hands each invocation of a plugin granted `local.folders` or `local.workspaces` the mounts of the invocation's
 * company (and of no other): every declared folder key with its stored real path, or null
 * when the operator has not configured it. The company is the kernel's record of the call,
 * so a plugin cannot name another company's folders.
 */
export function folderMountsDecorator(db: Database) {
  return async (plugin: LoadedPlugin, message: InvokeMessage): Promise<void> => {
    const grants: string[] = plugin.row.granted_capabilities ?? [];
    if (!grants.includes('local.folders') && !grants.includes('local.workspaces')) return;
    const companyId = message.info.companyId;
    if (!companyId) return;
    const declared = plugin.manifest.folders ?? [];
    const rows = declared.length === 0 ? [] : await db.query<{ folder_key: string; path: string }>(
      'select folder_key, path from plugin_folder_mounts where plugin_key = ? and company_id = ?', [plugin.key, companyId]);
    const stored = new Map(rows.map((row) => [row.folder_key, row.path]));
    const mounts: Record<string, FolderMount> = {};
    for (const folder of declared) mounts[folder.key] = { path: stored.get(folder.key) ?? null, access: folder.access };
    message.folders = mounts;
  };
}

const installed = new WeakSet<ExtensionHost>();

/** Adds the decorator once per extension host. */
export function installFolderMounts(host: ExtensionHost, db: Database): void {
  if (installed.has(host)) return;
  installed.add(host);
  host.invokeDecorators.push(folderMountsDecorator(db));
}
