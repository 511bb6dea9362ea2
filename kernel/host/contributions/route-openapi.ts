import type { JsonSchema, PluginManifest, RouteResponseManifest } from '../../../sdk/plugin/manifest.ts';
import { impliedErrors, type ApiOperation } from '../../http/openapi/operation.ts';
import type { DocumentTag } from '../../http/openapi/document.ts';
import { AGENT_REFERENCE_PARAMETERS } from '../../tenancy/agent-access.ts';
import { IDEMPOTENCY_KEY_PARAMETER } from '../../http/idempotency-key.ts';
import type { PluginRoute } from './routes.ts';
import type { ParameterDoc } from '../../http/route-spec.ts';

/**
 * The operations of mounted plugin routes, from the manifests' own route declarations: the
 * body and query schemas embedded are the ones route-dispatch validates requests with, the
 * path is the one mounted, and the auth kind is the one the host checks. The answer's shape
 * is not declared in a manifest, so it is described as any JSON value, beside the raw text
 * types and the event stream the route declares under `response`.
 */
export const PLUGIN_TAG_PREFIX = 'plugin:';

/** Failures the host answers for a plugin: an invalid answer, a plugin that is down or busy, a missed deadline. */
const HOST_ERRORS = [502, 503, 504] as const;

export function pluginOperations(routes: readonly PluginRoute[]): { operations: ApiOperation[]; schemas: Record<string, JsonSchema> } {
  const schemas: Record<string, JsonSchema> = {};
  const sorted = [...routes].sort((a, b) => a.plugin.localeCompare(b.plugin) || a.fullPath.localeCompare(b.fullPath) || a.route.method.localeCompare(b.route.method));
  const operations = sorted.map(({ plugin, route, fullPath }): ApiOperation => {
    const readsBody = route.method !== 'GET';
    const body = readsBody && !route.upload ? rehome(route.body, `${plugin}.${route.key}.body`, schemas) ?? { description: 'Any JSON value: the manifest declares no body schema.' } : undefined;
    const query = rehome(route.query, `${plugin}.${route.key}.query`, schemas);
    const errors = impliedErrors(route.auth, fullPath, readsBody || Boolean(query));
    if (route.agentBodyField) errors.push(404);
    if (route.upload) errors.push(408, 413, 415);
    if (route.download) errors.push(404);
    return {
      method: route.method,
      path: fullPath,
      operationId: `${plugin}.${route.key}`,
      summary: route.description?.split(/(?<=\.)\s/)[0] ?? `${route.key} (plugin ${plugin})`,
      description: route.description,
      tags: [`${PLUGIN_TAG_PREFIX}${plugin}`],
      auth: route.auth,
      body,
      bodyRequired: route.body ? undefined : false,
      rawBody: route.upload ? {
        contentType: 'multipart/form-data',
        description: `One file part named \`${route.upload.field}\` (${route.upload.contentTypes.join(', ')}); streamed into the blob store by the host, which hands the plugin its metadata.`,
        schema: { type: 'object', required: [route.upload.field], properties: { [route.upload.field]: { type: 'string', contentMediaType: 'application/octet-stream' } } },
      } : undefined,
      contentType: route.download ? 'application/octet-stream' : undefined,
      query,
      parameters: headerAndQueryParameters(route),
      success: [route.successStatus ?? 200],
      response: route.download ? { description: 'The blob the plugin names, streamed by the host.' } : JSON_ANSWER,
      responseContent: route.response ? answerContent(route.response) : undefined,
      errors: [...errors, ...HOST_ERRORS, ...(route.response?.stream ? [429] : [])],
      extensions: { 'x-keel-plugin': plugin, 'x-keel-route-key': route.key },
    };
  });
  return { operations, schemas };
}

/** The parameters a route documents beside its query schema: an agent's company, the Idempotency-Key header. */
function headerAndQueryParameters(route: PluginRoute['route']): ParameterDoc[] | undefined {
  const parameters = [...(route.agentParam ? AGENT_REFERENCE_PARAMETERS : []), ...(route.idempotencyKey ? [IDEMPOTENCY_KEY_PARAMETER] : [])];
  return parameters.length ? parameters : undefined;
}

const JSON_ANSWER = { description: "The plugin's answer: any JSON value (its shape is not declared in the manifest)." };

/** The media types a route declared it may answer, each described; JSON stays possible on every route. */
function answerContent(response: RouteResponseManifest): Record<string, JsonSchema> {
  const content: Record<string, JsonSchema> = { 'application/json': JSON_ANSWER };
  for (const type of response.contentTypes ?? []) content[type] = { type: 'string', description: `A ${type} body (UTF-8), sent with X-Content-Type-Options: nosniff.` };
  if (response.stream === 'sse') {
    content['text/event-stream'] = {
      type: 'string',
      description: 'Server-sent events: each `data:` line is one JSON value. One-shot answers end after their events; held streams relay the plugin\'s channel in the request\'s company, with `: keep-alive` comments, until the client leaves.',
    };
  }
  return content;
}

export function pluginTags(plugins: Iterable<{ key: string; manifest: PluginManifest }>): DocumentTag[] {
  return [...plugins].sort((a, b) => a.key.localeCompare(b.key)).map(({ key, manifest }) => ({
    name: `${PLUGIN_TAG_PREFIX}${key}`,
    description: `${manifest.displayName} ${manifest.version} (plugin \`${key}\`)${manifest.description ? `: ${manifest.description}` : ''}`,
  }));
}

/**
 * A schema with local references (`#/$defs/...`) means them relative to itself; embedded in
 * the document they would point into the document instead. Such a schema is published once
 * under components.schemas with its references rewritten to that place, and the operation
 * embeds the rewritten copy. Schemas without local references are embedded as they are.
 */
function rehome(schema: JsonSchema | undefined, name: string, schemas: Record<string, JsonSchema>): JsonSchema | undefined {
  if (!schema || !JSON.stringify(schema).includes('"$ref":"#')) return schema;
  const base = `#/components/schemas/${name}`;
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (!value || typeof value !== 'object') return value;
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [
      key, key === '$ref' && typeof inner === 'string' && inner.startsWith('#') ? base + inner.slice(1) : rewrite(inner),
    ]));
  };
  const rewritten = rewrite(schema) as JsonSchema;
  schemas[name] = rewritten;
  return rewritten;
}
