/**
 * Manifest validation shared with the host, so that `keel plugin build` and the test host
 * refuse exactly what `POST /api/plugins/install` would refuse. This re-export is the only
 * door from sdk/ into the host's manifest code.
 */
import { validateManifest } from '../../kernel/host/manifest/validate-manifest.ts';

export { validateManifest, MAX_MANIFEST_BYTES } from '../../kernel/host/manifest/validate-manifest.ts';
export { RESERVED_PLUGIN_KEYS, reservedKeyReason } from '../../kernel/host/manifest/reserved-keys.ts';

export interface ManifestIssue { path: string; message: string }

/** A manifest that failed validation: the one-line message plus every issue, field by field. */
export class InvalidManifestError extends Error {
  readonly issues: ManifestIssue[];
  constructor(message: string, issues: ManifestIssue[]) {
    super(message);
    this.name = 'InvalidManifestError';
    this.issues = issues;
  }
}

/** Validates `plugin.json` text; throws InvalidManifestError (never the host's HTTP error type). */
export function checkManifest(text: string, source: string): ReturnType<typeof validateManifest> {
  try {
    return validateManifest(text, source);
  } catch (error) {
    const candidate = error as { message?: string; issues?: ManifestIssue[]; details?: { issues?: ManifestIssue[] } };
    throw new InvalidManifestError(String(candidate.message ?? error), candidate.issues ?? candidate.details?.issues ?? []);
  }
}
export { pluginSchemaAjv } from '../../kernel/host/manifest/plugin-schema-ajv.ts';
