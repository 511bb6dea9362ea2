import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sdkRoot } from './sdk-root.ts';

/** The version `keel --version` prints: the SDK package's, which is versioned with the rest of Keel. */
export function cliVersion(): string {
  const manifest = JSON.parse(readFileSync(join(sdkRoot(), 'package.json'), 'utf8')) as { version?: string };
  return manifest.version ?? 'unknown';
}
