import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

/** Writes .br and .gz beside every text asset, so the kernel serves them without compressing per request. */
function precompress(): Plugin {
  return {
    name: 'keel-precompress',
    apply: 'build',
    closeBundle() {
      const walk = (dir: string): void => {
        for (const name of readdirSync(dir)) {
          const file = join(dir, name);
          if (statSync(file).isDirectory()) { walk(file); continue; }
          if (!/\.(js|css|html|svg|json|txt)$/.test(name)) continue;
          const body = readFileSync(file);
          writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
          writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
        }
      };
      walk(join(root, 'dist'));
    },
  };
}

export default defineConfig({
  root,
  base: '/',
  plugins: [react(), precompress()],
  // The console imports the SDK's typed client as an outside developer would (`@keel/sdk/client`), from its sources.
  resolve: { conditions: ['keel-source', 'browser', 'module', 'import', 'default'] },
  build: {
    outDir: join(root, 'dist'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // No inline data: modules; the page's CSP allows only files from the server.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  logLevel: 'warn',
});
