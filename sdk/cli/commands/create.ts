import { existsSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { reservedKeyReason } from '../../build/validate-manifest.ts';
import { CliError, emit, shownPath, userPath, type GlobalOptions } from '../output.ts';
import { scaffoldFiles } from './scaffold-files.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const TESTING_ENTRY = join(REPO_ROOT, 'sdk', 'testing', 'index.ts');
/** The manifest's key rule (kebab-case, 2-48 characters). */
const KEY = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** `plugins` and `examples` name the project's folders; anything else is a path. */
export function parentFolder(dir: string | undefined): string {
  if (dir === 'plugins' || dir === 'examples') return join(REPO_ROOT, dir);
  return userPath(dir ?? '.');
}

function titleOf(key: string): string {
  return key.split('-').map((word) => word[0]!.toUpperCase() + word.slice(1)).join(' ');
}

/** Writes a new plugin folder `<dir>/<name>` that builds and whose generated test passes. */
export async function createCommand(name: string, options: GlobalOptions & { dir?: string }): Promise<void> {
  if (!KEY.test(name) || name.length < 2 || name.length > 48) {
    throw new CliError('invalid_plugin_name', `"${name}" is not a plugin key: use 2-48 lower-case letters and digits in dash-separated words, e.g. team-notes`);
  }
  const reserved = reservedKeyReason(name);
  if (reserved) throw new CliError('invalid_plugin_name', `"${name}" is reserved (${reserved}); choose another plugin key`);
  const parent = parentFolder(options.dir);
  const folder = join(parent, name);
  if (existsSync(folder) && (await readdir(folder)).length > 0) throw new CliError('folder_not_empty', `${folder} already exists and is not empty`);
  let testingImport = relative(folder, TESTING_ENTRY).split(sep).join('/');
  if (!testingImport.startsWith('.')) testingImport = `./${testingImport}`;
  const tag = options.dir === 'examples' ? 'example' : options.dir === 'plugins' ? 'first-party' : null;
  const files = scaffoldFiles({ key: name, namespace: name.replaceAll('-', '_').slice(0, 31), displayName: titleOf(name), tag, testingImport });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(folder, path)), { recursive: true });
    await writeFile(join(folder, path), content, { flag: 'wx' });
  }
  const shown = shownPath(folder);
  emit(options, [
    `Created ${name} in ${shown}`,
    ...Object.keys(files).map((path) => `  ${path}`),
    '',
    'Next:',
    `  npm run keel -- plugin build ${shown}`,
    `  npm run keel -- plugin test ${shown}`,
    `  npm run keel -- plugin dev ${shown}     # with the kernel running (npm start)`,
  ], { pluginKey: name, folder, files: Object.keys(files) });
}
