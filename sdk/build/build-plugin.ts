import { readFile, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { bundling } from './bundler.ts';
import { folderImports, FOLDER_IMPORT_SUFFIX } from './folder-imports.ts';
import { fileURLToPath } from 'node:url';
import { build, stop, type Plugin } from 'esbuild';

/** The one specifier plugin code may import besides its own files. */
export const SDK_SPECIFIER = '@keel/sdk/plugin';
const SDK_ENTRY = resolve(dirname(fileURLToPath(import.meta.url)), '../plugin/index.ts');
const SDK_DIR = dirname(SDK_ENTRY);
/**
 * SDK folders bundled into plugins: the plugin API, the capability registry it builds `ctx`
 * from and the event declarations publishers and subscribers name events by.
 */
const SDK_BUNDLED_DIRS = [SDK_DIR, resolve(SDK_DIR, '../capabilities'), resolve(SDK_DIR, '../events')];
/** Pure shared modules the plugin API re-exports (model prices, which the kernel prices streams with too; the coding tools' facts, which the kernel's adapter catalog shows). */
const SDK_BUNDLED_FILES = new Set([resolve(SDK_DIR, '../shared/model-prices.ts'), resolve(SDK_DIR, '../shared/local-tools.ts')]);
const inSdk = (path: string) => SDK_BUNDLED_FILES.has(path) || SDK_BUNDLED_DIRS.some((dir) => path.startsWith(dir + sep));

/** The plugin's own source files (the SDK not counted) a build reads, all together. */
export const MAX_SOURCE_BYTES = 8 * 1024 * 1024;
/** The bundle the host evaluates in the plugin's isolate. */
export const MAX_BUNDLE_BYTES = 8 * 1024 * 1024;
/** A build that takes longer is stopped: pathological code can keep the parser busy. */
export const BUILD_TIMEOUT_MS = 30_000;

const MiB = (bytes: number) => `${bytes / (1024 * 1024)} MiB`;

/**
 * Why a plugin does not build. `code` is the error code the host answers with:
 * `plugin_too_large` (a limit above, named in the message) or `plugin_build_failed`.
 */
export class PluginBuildError extends Error {
  readonly code: 'plugin_too_large' | 'plugin_build_failed';
  constructor(code: PluginBuildError['code'], message: string) {
    super(message);
    this.name = 'PluginBuildError';
    this.code = code;
  }
}

export interface BuiltPlugin {
  /** One self-contained script (IIFE) that the host evaluates inside the plugin's isolate. */
  code: string;
  manifestText: string;
  folder: string;
  buildMs: number;
}

/**
 * Bundles a plugin folder (plugin.json + its entry module) into one script. Imports are
 * confined: the SDK specifier and files inside the plugin folder; Node built-ins and packages
 * fail the build with a message that says so, because nothing else exists in the sandbox.
 */
export async function buildPlugin(folder: string): Promise<BuiltPlugin> {
  const started = performance.now();
  const root = resolve(folder);
  const manifestText = await readFile(join(root, 'plugin.json'), 'utf8');
  const entry = (JSON.parse(manifestText) as { entry?: string }).entry;
  if (typeof entry !== 'string') throw new Error(`${join(root, 'plugin.json')}: "entry" is required`);
  const budget = new SourceBudget(root);
  const result = await bundling(() => bounded(build({
    entryPoints: [join(root, entry)],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'neutral',
    target: 'es2023',
    minify: false,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'silent',
    plugins: [confineImports(root), boundSources(root, budget), folderImports(root, budget)],
  }))).catch((error: { errors?: Array<{ pluginName?: string; text?: string }> }) => {
    const tooLarge = error?.errors?.find((message) => message.pluginName === 'keel-bound-sources' || message.text?.includes(SOURCES_TOO_LARGE));
    throw tooLarge ? new PluginBuildError('plugin_too_large', tooLarge.text ?? 'source files too large') : error;
  });
  const code = result.outputFiles[0]!.text;
  if (Buffer.byteLength(code) > MAX_BUNDLE_BYTES) {
    throw new PluginBuildError('plugin_too_large', `the bundle is larger than ${MiB(MAX_BUNDLE_BYTES)} (${(Buffer.byteLength(code) / (1024 * 1024)).toFixed(1)} MiB); a plugin bundle may be at most ${MiB(MAX_BUNDLE_BYTES)}`);
  }
  return { code, manifestText, folder: root, buildMs: performance.now() - started };
}

/**
 * esbuild runs in one service process shared by every build of this process. Code that
 * crashes it (a parser bomb: nesting deep enough to overflow its stack) or keeps it busy past
 * the timeout would leave every later build failing ("The service is no longer running") until
 * a restart: the service is stopped then, and the next build starts a fresh one. The failing
 * build answers why.
 */
async function bounded<T>(building: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new PluginBuildError('plugin_build_failed', `the build took longer than ${BUILD_TIMEOUT_MS / 1000} s and was stopped`)), BUILD_TIMEOUT_MS);
  });
  try {
    return await Promise.race([building, timeout]);
  } catch (error) {
    if (error instanceof PluginBuildError && error.code === 'plugin_build_failed') await stop();
    else if (/The service (was stopped|is no longer running)/.test(String((error as Error)?.message))) {
      await stop();
      throw new PluginBuildError('plugin_build_failed', 'the bundler crashed on this code (for example on nesting too deep to parse)');
    }
    throw error;
  } finally {
    clearTimeout(timer);
    building.catch(() => undefined);
  }
}

const SOURCES_TOO_LARGE = "the plugin's source files are larger than";

/** The bytes of the plugin's own files one build has read so far, refused past the limit. */
export class SourceBudget {
  private total = 0;
  private readonly root: string;
  constructor(root: string) { this.root = root; }
  /** Counts a file's bytes; the error text when the sources pass the limit with it. */
  add(path: string, bytes: number): string | null {
    this.total += bytes;
    if (this.total <= MAX_SOURCE_BYTES) return null;
    return `${SOURCES_TOO_LARGE} ${MiB(MAX_SOURCE_BYTES)} together (${relative(this.root, path)} passes the limit); a plugin's sources may be at most ${MiB(MAX_SOURCE_BYTES)}`;
  }
}

/** Counts the bytes of the plugin's own files as the build loads them, and refuses past the limit. */
function boundSources(root: string, budget: SourceBudget): Plugin {
  return {
    name: 'keel-bound-sources',
    setup(build) {
      build.onLoad({ filter: /.*/, namespace: 'file' }, async (args) => {
        if (!args.path.startsWith(root + sep)) return undefined;
        const tooLarge = budget.add(args.path, (await stat(args.path)).size);
        return tooLarge ? { errors: [{ text: tooLarge }] } : undefined;
      });
    },
  };
}

function confineImports(root: string): Plugin {
  return {
    name: 'keel-confine-imports',
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        if (args.path === SDK_SPECIFIER) return { path: SDK_ENTRY };
        if (args.path.endsWith(FOLDER_IMPORT_SUFFIX) && !inSdk(args.importer)) return undefined;
        const fromSdk = inSdk(args.importer);
        if (args.path.startsWith('.')) {
          const target = resolve(dirname(args.importer), args.path);
          const inside = fromSdk ? inSdk(target) : target.startsWith(root + sep);
          if (inside) return undefined;
          return { errors: [{ text: `"${args.path}" leaves the plugin folder; plugins may import only ${SDK_SPECIFIER} and their own files` }] };
        }
        return { errors: [{ text: `"${args.path}" is not available in the sandbox; plugins may import only ${SDK_SPECIFIER} and their own files (${relative(root, args.importer)})` }] };
      });
    },
  };
}
