import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { promisify } from 'node:util';
import { reservedKeyReason } from '../../build/validate-manifest.ts';
import { CliError, emit, shownPath, userPath, type GlobalOptions } from '../output.ts';
import { sdkRoot } from '../sdk-root.ts';
import { scaffoldFiles, type ProjectInput } from './scaffold-files.ts';

const SDK_ROOT = sdkRoot();
const SDK_PACKAGE = JSON.parse(readFileSync(join(SDK_ROOT, 'package.json'), 'utf8')) as { version: string; devDependencies: ProjectInput['tools'] };
/** The Keel checkout this CLI runs from; null when it runs from an installed @keel/sdk. */
const CHECKOUT = !SDK_ROOT.split(sep).includes('node_modules') && existsSync(join(dirname(SDK_ROOT), 'kernel')) ? dirname(SDK_ROOT) : null;
/** The manifest's key rule (kebab-case, 2-48 characters). */
const KEY = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** `plugins` and `examples` name the checkout's folders; anything else is a path. */
export function parentFolder(dir: string | undefined): string {
  if (dir === 'plugins' || dir === 'examples') {
    if (!CHECKOUT) throw new CliError('not_in_checkout', `--dir ${dir} names a folder of the Keel checkout, and this keel runs from an installed @keel/sdk; give a path instead`);
    return join(CHECKOUT, dir);
  }
  return userPath(dir ?? '.');
}

function titleOf(key: string): string {
  return key.split('-').map((word) => word[0]!.toUpperCase() + word.slice(1)).join(' ');
}

/**
 * The `@keel/sdk` dependency of a plugin project outside the checkout: `--sdk` (a tarball or an
 * SDK folder, as a `file:` path, else a version range of the published package); by default,
 * from the checkout, the SDK packed into the new folder (installs offline, and the folder keeps
 * working when moved); from an installed SDK, the published package at this SDK's version.
 */
async function sdkDependency(folder: string, sdk: string | undefined): Promise<string> {
  if (sdk !== undefined) return existsSync(userPath(sdk)) ? `file:${userPath(sdk)}` : sdk;
  if (!CHECKOUT) return `^${SDK_PACKAGE.version}`;
  const tarball = `keel-sdk-${SDK_PACKAGE.version}.tgz`;
  try {
    await promisify(execFile)('npm', ['pack', SDK_ROOT, '--pack-destination', folder, '--silent'], { cwd: SDK_ROOT, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new CliError('sdk_pack_failed', `npm pack of ${SDK_ROOT} failed: ${(stderr || message).trim()}`);
  }
  if (!existsSync(join(folder, tarball))) throw new CliError('sdk_pack_failed', `npm pack of ${SDK_ROOT} did not write ${tarball}`);
  return `file:${tarball}`;
}

/**
 * Writes a new plugin folder `<dir>/<name>` that builds and whose generated test passes. Inside
 * the checkout it resolves @keel/sdk through the checkout's workspace; anywhere else it is a
 * project of its own (package.json, tsconfig.json, vitest.config.ts).
 */
export async function createCommand(name: string, options: GlobalOptions & { dir?: string; sdk?: string }): Promise<void> {
  if (!KEY.test(name) || name.length < 2 || name.length > 48) {
    throw new CliError('invalid_plugin_name', `"${name}" is not a plugin key: use 2-48 lower-case letters and digits in dash-separated words, e.g. team-notes`);
  }
  const reserved = reservedKeyReason(name);
  if (reserved) throw new CliError('invalid_plugin_name', `"${name}" is reserved (${reserved}); choose another plugin key`);
  const parent = parentFolder(options.dir);
  const folder = join(parent, name);
  if (existsSync(folder) && (await readdir(folder)).length > 0) throw new CliError('folder_not_empty', `${folder} already exists and is not empty`);
  const inCheckout = CHECKOUT !== null && folder.startsWith(CHECKOUT + sep);
  if (inCheckout && options.sdk !== undefined) throw new CliError('sdk_in_checkout', `${folder} is inside the Keel checkout, which provides @keel/sdk itself; --sdk is for a folder outside it`);
  await mkdir(folder, { recursive: true });
  const project = inCheckout ? null : { sdk: await sdkDependency(folder, options.sdk), tools: SDK_PACKAGE.devDependencies };
  const tag = options.dir === 'examples' ? 'example' : options.dir === 'plugins' ? 'first-party' : null;
  const files = scaffoldFiles({ key: name, namespace: name.replaceAll('-', '_').slice(0, 31), displayName: titleOf(name), tag, project });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(folder, path)), { recursive: true });
    await writeFile(join(folder, path), content, { flag: 'wx' });
  }
  const shown = shownPath(folder);
  const next = project
    ? [
      `cd ${shown}`,
      'npm install',
      'npm test',
      'npm run typecheck',
      'npm run dev    # with a Keel server running; add -- --api-base <url> if keel does not find it',
    ]
    : [
      `npm run keel -- plugin build ${shown}`,
      `npm run keel -- plugin test ${shown}`,
      `npm run keel -- plugin dev ${shown}     # with the kernel running (npm start)`,
    ];
  emit(options, [
    `Created ${name} in ${shown}`,
    ...Object.keys(files).map((path) => `  ${path}`),
    ...(project ? [`  @keel/sdk: ${project.sdk}`] : []),
    '',
    'Next:',
    ...next.map((line) => `  ${line}`),
  ], { pluginKey: name, folder, files: Object.keys(files), sdk: project?.sdk ?? null, next: next.map((line) => line.replace(/\s+#.*$/, '')) });
}
