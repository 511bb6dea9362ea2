/**
 * Builds what `npm pack` ships in dist/: JavaScript for Node and declarations for editors.
 *
 * The SDK is TypeScript run as is inside the Keel checkout, but Node does not strip types
 * from files under node_modules (ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING), which is where
 * an installed package lives: so each entry point is bundled to ESM here (dependencies stay
 * imports, shared code goes to shared chunks so classes such as PluginError are one class
 * across entry points), and declarations are emitted with tsc so a consumer's typecheck
 * reads .d.ts files (skipLibCheck) instead of compiling the SDK with its own settings.
 *
 * The TypeScript sources are shipped too: the plugin bundler (sdk/build) bundles
 * plugin/ and capabilities/ into each plugin's isolate from them. dist/ sits one level below
 * the package root, as sdk/build/ and sdk/cli/ do, so the paths they compute from their own
 * location (../plugin/index.ts, ../package.json) hold in both layouts.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const SDK = fileURLToPath(new URL('..', import.meta.url));
const DIST = `${SDK}dist`;

/** dist/<name>.js for each entry of package.json's exports (and the `keel` bin). */
export const ENTRY_POINTS = {
  plugin: 'plugin/index.ts',
  testing: 'testing/index.ts',
  client: 'client/index.ts',
  capabilities: 'capabilities/index.ts',
  manifest: 'manifest/validate-manifest.ts',
  bin: 'cli/bin.ts',
};

rmSync(DIST, { recursive: true, force: true });
const started = performance.now();
await build({
  absWorkingDir: SDK,
  entryPoints: ENTRY_POINTS,
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  packages: 'external',
  chunkNames: '[name]-[hash]',
  logLevel: 'warning',
});
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', `${SDK}pack/tsconfig.types.json`], { stdio: 'inherit' });
console.log(`@keel/sdk: built dist/ in ${Math.round(performance.now() - started)} ms`);
