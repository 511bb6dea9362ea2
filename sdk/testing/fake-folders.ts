import type { FolderEntry } from '../plugin/context.ts';
import type { FolderManifest } from '../plugin/manifest.ts';
import { CapabilityFault } from './errors.ts';

/**
 * `ctx.folders` over in-memory files, one map per mount key. Mount keys must be declared in
 * the manifest, writes need `readWrite` access, and paths are confined the way the real host
 * confines them: relative, no `..`, no NUL, no backslashes. Seed files with
 * `host.folders.set('docs', 'a/b.md', 'text')`; read what the plugin wrote with `get`.
 */
export class FakeFolders {
  private readonly mounts = new Map<string, { access: FolderManifest['access']; files: Map<string, string> }>();

  constructor(declared: readonly FolderManifest[]) {
    for (const folder of declared) this.mounts.set(folder.key, { access: folder.access, files: new Map() });
  }

  set(folderKey: string, path: string, content: string): this {
    this.mount(folderKey).files.set(normalise(path), content);
    return this;
  }

  get(folderKey: string, path: string): string | undefined {
    return this.mount(folderKey).files.get(normalise(path));
  }

  /** Every file of a mount, by path. */
  files(folderKey: string): Record<string, string> {
    return Object.fromEntries([...this.mount(folderKey).files].sort(([a], [b]) => a.localeCompare(b)));
  }

  private mount(folderKey: unknown): { access: FolderManifest['access']; files: Map<string, string> } {
    const mount = this.mounts.get(String(folderKey));
    if (!mount) throw new CapabilityFault(404, 'folder_not_configured', `Folder "${String(folderKey)}" is not declared under folders in plugin.json`);
    return mount;
  }

  /** The capability's method table, as the isolate calls it. */
  methods(): Record<string, (args: unknown[]) => unknown> {
    return {
      read: ([key, path]) => {
        const content = this.mount(key).files.get(normalise(path));
        if (content === undefined) throw new CapabilityFault(404, 'file_not_found', `${String(key)}:${String(path)} does not exist`);
        return content;
      },
      write: ([key, path, content]) => {
        const mount = this.mount(key);
        if (mount.access !== 'readWrite') throw new CapabilityFault(403, 'folder_read_only', `Folder "${String(key)}" is mounted read-only`);
        if (typeof content !== 'string') throw new CapabilityFault(400, 'invalid_content', 'ctx.folders.write needs string content');
        mount.files.set(normalise(path), content);
        return null;
      },
      exists: ([key, path]) => {
        const files = this.mount(key).files;
        const target = normalise(path);
        return files.has(target) || [...files.keys()].some((file) => file.startsWith(`${target}/`));
      },
      list: ([key, path]) => {
        const files = this.mount(key).files;
        const prefix = path === undefined || path === null || path === '' || path === '.' ? '' : `${normalise(path)}/`;
        const entries = new Map<string, FolderEntry>();
        for (const [file, content] of files) {
          if (!file.startsWith(prefix)) continue;
          const [name, ...rest] = file.slice(prefix.length).split('/') as [string, ...string[]];
          entries.set(name, rest.length ? { name, kind: 'directory', size: 0 } : { name, kind: 'file', size: Buffer.byteLength(content) });
        }
        return [...entries.values()].sort((a, b) => a.name.localeCompare(b.name));
      },
    };
  }
}

function normalise(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length === 0) throw new CapabilityFault(400, 'invalid_path', 'A folder path must be a non-empty string');
  if (raw.includes('\0') || raw.includes('\\') || raw.startsWith('/') || /%2f|%5c|%00/i.test(raw)) {
    throw new CapabilityFault(400, 'invalid_path', `"${raw}" is not a relative path inside the folder`);
  }
  const parts = raw.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.some((part) => part === '..')) throw new CapabilityFault(400, 'invalid_path', `"${raw}" leaves the folder`);
  if (parts.length === 0) throw new CapabilityFault(400, 'invalid_path', `"${raw}" names the folder itself`);
  return parts.join('/');
}
