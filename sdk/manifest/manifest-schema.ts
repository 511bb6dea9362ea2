import { CAPABILITY_IDS } from '../capabilities/index.ts';
import { CAPABILITY_ID, manifestSchema } from './fragments.ts';

/**
 * The manifest's JSON schema as manifests are checked against it and as
 * GET /api/plugins/manifest-schema serves it: fragments.ts's schema with the capability
 * registry's ids enumerated wherever it asks for a capability id (CAPABILITY_ID).
 */
export const MANIFEST_SCHEMA: typeof manifestSchema = withCapabilityIds(manifestSchema) as typeof manifestSchema;

function withCapabilityIds(node: unknown): unknown {
  if (node === CAPABILITY_ID) return { enum: [...CAPABILITY_IDS], description: CAPABILITY_ID.description };
  if (Array.isArray(node)) return node.map(withCapabilityIds);
  if (node !== null && typeof node === 'object') return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, withCapabilityIds(value)]));
  return node;
}
