import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The SDK package's folder (the one holding its package.json): sdk/ in the Keel checkout,
 * node_modules/@keel/sdk once installed. Found by walking up from this module, because the
 * module sits at sdk/cli/ in the checkout but inside dist/ in the packed SDK.
 */
export function sdkRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  return dir;
}
