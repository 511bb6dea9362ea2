import { readFileSync } from 'node:fs';

/**
 * The version `keel --version` prints: the project's package.json, which versions the SDK and
 * the CLI with the rest of Keel (the SDK has no package.json of its own).
 */
export function cliVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
  return manifest.version ?? 'unknown';
}
