import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { schemaIssuesOf } from '../../shared/validation-issues.ts';
import addFormatsModule from 'ajv-formats';
import type { KeelClient } from '../../client/index.ts';
import { CliError } from '../errors.ts';
import { userPath } from '../user-paths.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** `--payload-json`: JSON text, or `@file` for a file holding it. */
export function parsePayload(text: string | undefined): Record<string, unknown> {
  if (text === undefined) throw new CliError('payload_required', 'This command needs --payload-json <json> (or --payload-json @file.json)');
  const source = text.startsWith('@') ? readFileSync(userPath(text.slice(1)), 'utf8') : text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(source);
  } catch (error) {
    throw new CliError('payload_invalid', `--payload-json is not JSON: ${(error as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new CliError('payload_invalid', '--payload-json must be a JSON object');
  return parsed as Record<string, unknown>;
}

type OpenApiDocument = { paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Record<string, unknown> }> } }>>; components?: unknown };

/**
 * Checks a payload against the request body schema the server validates the route with, taken
 * from the server's own OpenAPI document (`GET /api/openapi.json`, which embeds the kernel's
 * validators' schemas): one schema, never a copy in the CLI, and the one of the version that
 * will receive the call. Issues are worded as the server words them (dotted paths).
 */
export async function validatePayload(client: KeelClient, method: string, template: string, payload: unknown): Promise<void> {
  const document = await client.get<OpenApiDocument>('/api/openapi.json');
  const schema = document.paths?.[template]?.[method.toLowerCase()]?.requestBody?.content?.['application/json']?.schema;
  if (!schema) throw new CliError('schema_unavailable', `The server's OpenAPI document has no request body schema for ${method} ${template}; not sending an unchecked payload`);
  // The schema may point into the document's components; it is compiled with them beside it.
  const ajv = addFormats(new Ajv({ allErrors: true, strict: false, validateSchema: false }));
  const check = ajv.compile({ ...schema, components: document.components });
  if (check(structuredClone(payload))) return;
  const issues = schemaIssuesOf(check.errors).map(({ path, message }) => ({ path, message }));
  const first = issues[0]!;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  throw new CliError('payload_invalid', `Invalid payload (checked against ${method} ${template} before sending; nothing was sent): ${first.path === '(body)' ? 'payload' : first.path} ${first.message}${more}`, issues);
}

