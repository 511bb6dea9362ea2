/**
 * Manifest validation shared with the host, so that `keel plugin build` and the test host
 * refuse exactly what `POST /api/plugins/install` would refuse.
 */
import { validateManifest } from '../manifest/validate-manifest.ts';

export { validateManifest, MAX_MANIFEST_BYTES, InvalidManifestError, type ManifestIssue } from '../manifest/validate-manifest.ts';
export { RESERVED_PLUGIN_KEYS, reservedKeyReason } from '../manifest/reserved-keys.ts';
export { pluginSchemaAjv } from '../manifest/plugin-schema-ajv.ts';

/** Validates `plugin.json` text; throws InvalidManifestError (never the host's HTTP error type). */
export function checkManifest(text: string, source: string): ReturnType<typeof validateManifest> {
  return validateManifest(text, source);
}
