import { readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

/** The one specifier plugin code may import besides its own files. */
export const SDK_SPECIFIER = '@keel/sdk/plugin';
const SDK_ENTRY = resolve(dirname(fileURLToPath(import.meta.url)), '../plugin/index.ts');
const SDK_DIR = dirname(SDK_ENTRY);

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
  const result = await build({
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
    plugins: [confineImports(root)],
  });
  return { code: result.outputFiles[0]!.text, manifestText, folder: root, buildMs: performance.now() - started };
}

function confineImports(root: string): Plugin {
  return {
    name: 'keel-confine-imports',
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === 'entry-point') return undefined;
        if (args.path === SDK_SPECIFIER) return { path: SDK_ENTRY };
        const fromSdk = args.importer.startsWith(SDK_DIR + sep);
        if (args.path.startsWith('.')) {
          const target = resolve(dirname(args.importer), args.path);
          const inside = fromSdk ? target.startsWith(SDK_DIR + sep) : target.startsWith(root + sep);
          if (inside) return undefined;
          return { errors: [{ text: `"${args.path}" leaves the plugin folder; plugins may import only ${SDK_SPECIFIER} and their own files` }] };
        }
        return { errors: [{ text: `"${args.path}" is not available in the sandbox; plugins may import only ${SDK_SPECIFIER} and their own files (${relative(root, args.importer)})` }] };
      });
    },
  };
}
