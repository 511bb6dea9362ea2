import type { KeelConfig } from '../../config/schema.ts';
import { components } from './components.ts';
import { openApiPath, pathParameters, toOperationObject, type ApiOperation } from './operation.ts';
import type { Schema } from '../validate.ts';

export interface DocumentTag { name: string; description?: string }

/**
 * Assembles an OpenAPI 3.1 document from operations. Schemas are JSON Schema in the subset
 * ajv and draft 2020-12 share, which is OpenAPI 3.1's own dialect, so they are embedded as
 * they validate.
 */
export function openApiDocument(input: {
  version: string;
  deploymentMode: KeelConfig['deploymentMode'];
  operations: readonly ApiOperation[];
  tags: readonly DocumentTag[];
  /** Further component schemas the operations refer to. */
  schemas?: Record<string, Schema>;
}): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const templates = new Map<string, string>();
  for (const original of input.operations) {
    const operation = { ...original, path: sharedTemplate(original.path, templates) };
    const item = (paths[openApiPath(operation.path)] ??= {});
    const method = operation.method.toLowerCase();
    if (item[method]) throw new Error(`Two operations for ${operation.method} ${operation.path}`);
    item[method] = toOperationObject(operation, input.deploymentMode);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Keel API',
      version: input.version,
      description: [
        "Every route of this instance: the kernel's and those of its enabled plugins, described from the schemas that validate their requests.",
        'Each operation states who may call it in `x-keel-auth` (and as `security`). Every error answers with one body, `components.schemas.Error`, whose `requestId` is also sent as the `X-Request-Id` header.',
        input.deploymentMode === 'local_trusted' ? 'This instance runs in `local_trusted` mode: a request without credentials acts as the local board.' : '',
      ].filter(Boolean).join('\n\n'),
    },
    tags: input.tags,
    paths,
    components: withSchemas(components(), input.schemas ?? {}),
  };
}

function withSchemas(base: Record<string, unknown>, extra: Record<string, Schema>): Record<string, unknown> {
  return { ...base, schemas: { ...(base.schemas as Record<string, Schema>), ...extra } };
}

/**
 * OpenAPI holds two templated paths that differ only in their parameters' names to be the
 * same path, and refuses them. Routes of different methods may name a parameter differently
 * (`GET /items/:id`, `DELETE /items/:itemId`); the later one is listed under the first one's
 * names, which changes nothing a client sends.
 */
function sharedTemplate(path: string, templates: Map<string, string>): string {
  const shape = path.replace(/:[A-Za-z_][A-Za-z0-9_]*/g, ':');
  const first = templates.get(shape);
  if (first === undefined) {
    templates.set(shape, path);
    return path;
  }
  if (first === path) return path;
  const names = pathParameters(first);
  let index = 0;
  return path.replace(/:[A-Za-z_][A-Za-z0-9_]*/g, () => `:${names[index++]}`);
}
