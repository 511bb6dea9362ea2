import { PluginError } from '@keel/sdk/plugin';
import { ROOT, type WikiContext } from './context.ts';

/** A file's text, or null when nothing is there. */
export async function readIfExists(ctx: WikiContext, path: string): Promise<string | null> {
  try {
    return await ctx.folders.read(ROOT, path);
  } catch (error) {
    if ((error as PluginError).code === 'file_not_found') return null;
    throw error;
  }
}

/** Writes a file unless one is already there (bootstrap never replaces what a company wrote). */
export async function writeIfMissing(ctx: WikiContext, path: string, content: string): Promise<boolean> {
  if (await ctx.folders.exists(ROOT, path)) return false;
  await ctx.folders.write(ROOT, path, content);
  return true;
}

/** Every file under a folder of the mount (depth-first, names sorted), relative to the mount. */
export async function walkFiles(ctx: WikiContext, folder: string, limit = 50_000): Promise<string[]> {
  const files: string[] = [];
  const pending = [folder];
  while (pending.length && files.length < limit) {
    const current = pending.shift()!;
    let entries;
    try {
      entries = await ctx.folders.list(ROOT, current);
    } catch (error) {
      if ((error as PluginError).code === 'file_not_found') continue;
      throw error;
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const path = `${current}/${entry.name}`;
      if (entry.kind === 'directory') pending.push(path);
      else files.push(path);
    }
  }
  return files;
}

/** Serialises writers of one file within the database (a stale-write check and its write are one step). */
export async function lockFile(ctx: WikiContext, companyId: string, path: string): Promise<void> {
  await ctx.db.query('insert into file_locks (company_id, path) values ($1, $2) on conflict (company_id, path) do update set path = excluded.path', [companyId, path]);
}

export function notFound(what: string, path: string): PluginError {
  return new PluginError(404, `${what}_not_found`, `No ${what} "${path}"`);
}
