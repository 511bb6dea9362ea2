import { localFolders as spec } from '../../../../sdk/capabilities/folders.ts';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import type { FolderMount } from '../../protocol/messages.ts';
import type { Invocation } from '../../worker/invocation.ts';
import { assertDescriptorInside, CREATE_FLAGS, ensureParent, escapes, isInside, mountRoot, pathSegments, READ_FLAGS, resolveExisting } from '../../../files/folder-paths.ts';
import { CapabilityError, type WorkerCapability } from '../../worker/capabilities/types.ts';
import { workerUnit } from '../../worker/capabilities/unit.ts';

/**
 * `ctx.folders`: text files in the local folders an operator mounted for the invocation's
 * company. The kernel attaches that company's mounts to each invocation (never anything the
 * plugin names), so a plugin reaches only the folders of the company it is working for.
 * Errors name the folder key and the relative path the plugin gave, never a host path.
 */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;
export const MAX_LIST_ENTRIES = 1000;
const MAX_SCANNED_ENTRIES = 10_000;
/** Writes land in a temporary file first and are renamed into place, so readers never see half a file. */
const TEMP_PREFIX = '.keel-write-';
const FOLDER_KEY = /^[a-z][a-z0-9]*([-_.][a-z0-9]+)*$/;

const errno = (error: unknown) => String((error as { code?: unknown })?.code ?? '');

function mountOf(invocation: Invocation, rawKey: unknown): { key: string; mount: FolderMount & { path: string } } {
  if (typeof rawKey !== 'string' || rawKey.length > 64 || !FOLDER_KEY.test(rawKey)) throw new CapabilityError(400, 'invalid_folder_key', 'The first argument must be a folder key declared under folders in plugin.json');
  const mounts = invocation.message.folders;
  // The registry marks folder methods company-scoped: a call without a company is refused before it gets here.
  if (!mounts) throw new CapabilityError(403, 'company_scope_required', 'Local folders belong to a company; this invocation has none');
  if (!Object.hasOwn(mounts, rawKey)) throw new CapabilityError(404, 'folder_not_declared', `No local folder "${rawKey}" is declared under folders in plugin.json`);
  const mount = mounts[rawKey]!;
  if (mount.path === null) {
    throw new CapabilityError(409, 'folder_not_configured', `Local folder "${rawKey}" is not configured for this company; an operator sets it with PUT /api/plugins/{pluginId}/companies/{companyId}/local-folders/${rawKey}`);
  }
  return { key: rawKey, mount: mount as FolderMount & { path: string } };
}

async function read(invocation: Invocation, args: unknown[]): Promise<string> {
  const { key, mount } = mountOf(invocation, args[0]);
  const segments = pathSegments(args[1], false);
  const shown = segments.join('/');
  const root = await mountRoot(key, mount.path);
  const real = await resolveExisting(root, segments, shown);
  if (!real) throw new CapabilityError(404, 'file_not_found', `"${shown}" does not exist in folder "${key}"`);
  const handle = await fs.open(real, READ_FLAGS).catch((error: unknown) => {
    throw errno(error) === 'ELOOP' ? escapes(shown) : new CapabilityError(403, 'folder_access_failed', `"${shown}" cannot be opened`);
  });
  try {
    await assertDescriptorInside(handle.fd, root, shown);
    const stat = await handle.stat();
    if (stat.isDirectory()) throw new CapabilityError(400, 'not_a_file', `"${shown}" is a directory; use ctx.folders.list`);
    if (!stat.isFile()) throw new CapabilityError(400, 'not_a_file', `"${shown}" is not a regular file`);
    if (stat.size > MAX_FILE_BYTES) throw new CapabilityError(413, 'file_too_large', `"${shown}" is larger than ${MAX_FILE_BYTES} bytes`);
    // Read to the limit, not to the size stat gave: the file may grow meanwhile.
    const buffer = Buffer.alloc(MAX_FILE_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > MAX_FILE_BYTES) throw new CapabilityError(413, 'file_too_large', `"${shown}" is larger than ${MAX_FILE_BYTES} bytes`);
    }
    return new TextDecoder('utf-8').decode(buffer.subarray(0, length));
  } finally {
    await handle.close();
  }
}

async function write(invocation: Invocation, args: unknown[]): Promise<null> {
  const { key, mount } = mountOf(invocation, args[0]);
  if (mount.access !== 'readWrite') throw new CapabilityError(403, 'folder_read_only', `Local folder "${key}" is declared read-only (access: read)`);
  const segments = pathSegments(args[1], false);
  const shown = segments.join('/');
  if (typeof args[2] !== 'string') throw new CapabilityError(400, 'invalid_content', 'The content must be a string');
  const content = Buffer.from(args[2], 'utf8');
  if (content.length > MAX_FILE_BYTES) throw new CapabilityError(413, 'file_too_large', `Files may be at most ${MAX_FILE_BYTES} bytes`);
  const name = segments[segments.length - 1]!;
  if (name.startsWith(TEMP_PREFIX)) throw new CapabilityError(400, 'invalid_path', `Names starting with ${TEMP_PREFIX} are reserved`);
  const root = await mountRoot(key, mount.path);
  const parent = await ensureParent(root, segments.slice(0, -1), shown);
  const target = join(parent, name);
  let mode = 0o644;
  const existing = await fs.lstat(target).catch((error: unknown) => {
    if (errno(error) === 'ENOENT') return null;
    throw new CapabilityError(403, 'folder_access_failed', `"${shown}" cannot be accessed`);
  });
  if (existing?.isSymbolicLink()) throw new CapabilityError(403, 'symlink_refused', `"${shown}" is a symbolic link; writes never follow links`);
  if (existing && !existing.isFile()) throw new CapabilityError(409, 'not_a_file', `"${shown}" exists and is not a regular file`);
  if (existing) mode = existing.mode & 0o777;
  const temp = join(parent, `${TEMP_PREFIX}${randomBytes(8).toString('hex')}`);
  const handle = await fs.open(temp, CREATE_FLAGS, mode).catch(() => {
    throw new CapabilityError(403, 'folder_access_failed', `"${shown}" cannot be written`);
  });
  let renamed = false;
  try {
    await assertDescriptorInside(handle.fd, root, shown);
    await handle.writeFile(content);
    await handle.close();
    // rename replaces a link at the target rather than following it.
    await fs.rename(temp, target).catch(() => { throw new CapabilityError(403, 'folder_access_failed', `"${shown}" cannot be written`); });
    renamed = true;
  } finally {
    await handle.close().catch(() => undefined);
    if (!renamed) await fs.unlink(temp).catch(() => undefined);
  }
  return null;
}

async function list(invocation: Invocation, args: unknown[]): Promise<Array<{ name: string; kind: 'file' | 'directory'; size: number }>> {
  const { key, mount } = mountOf(invocation, args[0]);
  const segments = pathSegments(args[1], true);
  const shown = segments.join('/') || '.';
  const root = await mountRoot(key, mount.path);
  const real = await resolveExisting(root, segments, shown);
  if (!real) throw new CapabilityError(404, 'file_not_found', `"${shown}" does not exist in folder "${key}"`);
  if (!(await fs.stat(real)).isDirectory()) throw new CapabilityError(400, 'not_a_directory', `"${shown}" is not a directory`);
  const entries: Array<{ name: string; kind: 'file' | 'directory'; size: number }> = [];
  const dir = await fs.opendir(real);
  let scanned = 0;
  for await (const dirent of dir) {
    if (++scanned > MAX_SCANNED_ENTRIES) break;
    if (dirent.name.startsWith(TEMP_PREFIX)) continue;
    const full = join(real, dirent.name);
    try {
      let target = full;
      if (dirent.isSymbolicLink()) {
        // A link is listed as what it leads to, and only when that lies inside the folder.
        target = await fs.realpath(full);
        if (!isInside(root, target)) continue;
      }
      const stat = await fs.stat(target);
      if (stat.isFile()) entries.push({ name: dirent.name, kind: 'file', size: stat.size });
      else if (stat.isDirectory()) entries.push({ name: dirent.name, kind: 'directory', size: 0 });
    } catch {
      // Vanished or unreadable entries are left out.
    }
  }
  // The directory read must still be the one that was checked (no component swapped for a link meanwhile).
  if ((await fs.realpath(real).catch(() => null)) !== real) throw escapes(shown);
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return entries.slice(0, MAX_LIST_ENTRIES);
}

async function exists(invocation: Invocation, args: unknown[]): Promise<boolean> {
  const { key, mount } = mountOf(invocation, args[0]);
  const segments = pathSegments(args[1], true);
  const root = await mountRoot(key, mount.path);
  return (await resolveExisting(root, segments, segments.join('/') || '.')) !== null;
}

export function foldersCapability(): WorkerCapability {
  return { read, write, list, exists };
}

export const workerSide = workerUnit(spec, () => ({ folders: foldersCapability() }));
