import { defineCapability, method, present } from './define.ts';
import { nothing, text } from './schemas.ts';

export interface FolderEntry { name: string; kind: 'file' | 'directory'; size: number }
/** One file changed on disk inside a watched mount, its path relative to the mount. */
export interface FolderChange { path: string; kind: 'add' | 'change' | 'unlink' }
/**
 * The payload the host runs a folder's `onChange` job with (`folders[].onChange.job` in
 * plugin.json): the mount's key and the files changed outside the plugin's own calls, batched
 * (at most 500 a call). The job's handler receives it typed (plugin.gen.ts).
 */
export interface FolderChanges { folderKey: string; changes: FolderChange[] }
/**
 * Text files in the folders an operator mounted for the invocation's company. Paths are
 * relative and `/`-separated; `..`, absolute paths, backslashes, percent escapes and links
 * leading outside the folder are refused. Files are at most 5 MiB.
 */
export interface FoldersCapability {
  read(folderKey: string, path: string): Promise<string>;
  /** Creates missing parent directories; never writes through a symbolic link. */
  write(folderKey: string, path: string, content: string): Promise<void>;
  /** The folder itself when `path` is omitted; at most 1,000 entries, sorted by name. */
  list(folderKey: string, path?: string): Promise<FolderEntry[]>;
  exists(folderKey: string, path: string): Promise<boolean>;
}

const key = text(64);
const path = text(4096);
export const localFolders = defineCapability<{ folders: FoldersCapability }>()({
  id: 'local.folders',
  summary: 'Read and write files in folders an operator mounted for a company',
  members: {
    folders: {
      read: method('worker', [key, path], { type: 'string' }, { scope: 'company' }),
      write: method('worker', [key, path, { type: 'string' }], nothing, { scope: 'company' }),
      list: method('worker', [key, path], { type: 'array', items: { type: 'object', required: ['name', 'kind', 'size'] } }, { required: 1, scope: 'company' }),
      exists: method('worker', [key, path], { type: 'boolean' }, { scope: 'company' }),
    },
  },
  requiredBy: (manifest) => present(manifest, 'folders'),
  // A plugin that works with directories by absolute path (local.workspaces) uses the same mounts.
  satisfiedAlsoBy: ['local.workspaces'],
});
