import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { Plugin } from 'esbuild';
import type { SourceBudget } from './build-plugin.ts';

/**
 * `import files from './catalog?files'` gives the plugin every file under a folder of its own,
 * read when the plugin is built: the isolate has no file system, so content a plugin ships (a
 * catalog, templates) travels inside the bundle. The module's default export is
 * `FolderFile[]` (sdk/plugin/folder-import.d.ts), sorted by path; the bytes count against the
 * plugin's source limit like its code.
 */
export const FOLDER_IMPORT_SUFFIX = '?files';
const NAMESPACE = 'keel-folder';

/** One file of an imported folder: UTF-8 text as `text`, any other bytes as `base64`. */
export interface FolderFile { path: string; text?: string; base64?: string }

export function folderImports(root: string, budget: SourceBudget): Plugin {
  return {
    name: 'keel-folder-imports',
    setup(build) {
      build.onResolve({ filter: /\?files$/ }, async (args) => {
        const folder = resolve(dirname(args.importer), args.path.slice(0, -FOLDER_IMPORT_SUFFIX.length));
        const real = await realpath(folder).catch(() => null);
        const realRoot = await realpath(root);
        if (!real || !(real === realRoot || real.startsWith(realRoot + sep))) {
          return { errors: [{ text: `"${args.path}" is not a folder inside the plugin folder; a folder import reads only the plugin's own files` }] };
        }
        return { path: real, namespace: NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, async (args) => {
        const files: FolderFile[] = [];
        const problem = await walk(args.path, args.path, files, budget);
        if (problem) return { errors: [{ text: problem }] };
        files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
        return { contents: JSON.stringify(files), loader: 'json' };
      });
    },
  };
}

/**
 * Regular files only: a symbolic link could name a file outside the plugin folder, so it
 * fails the build instead of being followed.
 */
async function walk(base: string, folder: string, files: FolderFile[], budget: SourceBudget): Promise<string | null> {
  for (const entry of await readdir(folder)) {
    const path = join(folder, entry);
    const info = await lstat(path);
    if (info.isDirectory()) {
      const problem = await walk(base, path, files, budget);
      if (problem) return problem;
    } else if (info.isFile()) {
      const tooLarge = budget.add(path, info.size);
      if (tooLarge) return tooLarge;
      const bytes = await readFile(path);
      const text = bytes.toString('utf8');
      const name = relative(base, path).split(sep).join('/');
      files.push(Buffer.from(text, 'utf8').equals(bytes) ? { path: name, text } : { path: name, base64: bytes.toString('base64') });
    } else {
      return `${relative(base, path)} in a folder import is not a regular file (a symbolic link or a device); folder imports read regular files only`;
    }
  }
  return null;
}
