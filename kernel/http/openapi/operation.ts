import type { KeelConfig } from '../../config/schema.ts';
import { AUTH_KINDS, type RouteAuthKind } from '../route-auth.ts';
import type { HttpMethod, ParameterDoc } from '../route-spec.ts';
import type { Schema } from '../validate.ts';
import { errorResponseRef, REQUEST_ID_HEADER } from './components.ts';

/**
 * One operation of the document, whoever serves it: kernel routes (from their declarations)
 * and plugin routes (from their manifests) are both brought to this shape, and this module
 * alone turns it into OpenAPI.
 */
export interface ApiOperation {
  method: HttpMethod;
  /** Koa form, parameters as `:name`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: RouteAuthKind;
  /** The schema the JSON body is validated with. */
  body?: Schema;
  /** Whether a JSON body must be sent (a missing one counts as `{}` on kernel routes). */
  bodyRequired?: boolean;
  rawBody?: { contentType: string; schema?: Schema; description: string };
  /** The schema the query is validated with. */
  query?: Schema;
  parameters?: readonly ParameterDoc[];
  success: readonly number[];
  response?: Schema;
  contentType?: string;
  /** Several media types a success may come as (a plugin route with raw or event answers): each with its schema. */
  responseContent?: Record<string, Schema>;
  errors: readonly number[];
  /** `x-` fields: which plugin serves it, for example. */
  extensions?: Record<string, unknown>;
}

const PATH_PARAMETER = /:([A-Za-z_][A-Za-z0-9_]*)/g;

/** `/api/companies/:companyId` -> `/api/companies/{companyId}`. */
export function openApiPath(path: string): string {
  return path.replace(PATH_PARAMETER, '{$1}');
}

export function pathParameters(path: string): string[] {
  return [...path.matchAll(PATH_PARAMETER)].map((match) => match[1]!);
}

/**
 * Error statuses every route of an auth kind and path can answer: 401 without valid
 * credentials, 403 everywhere (a Host this instance does not serve or a foreign Origin,
 * `host_not_allowed`/`origin_not_allowed`; and wherever a caller authenticates, the kind or
 * the company named in the path, or an `X-Service-Run-Id` it may not act for), 404 where the
 * path names something, 400 where input is validated, and 503 everywhere (the database, or an
 * instance still starting).
 */
export function impliedErrors(auth: RouteAuthKind, path: string, validatesInput: boolean): number[] {
  const named = pathParameters(path).length > 0;
  const statuses = [403, 503];
  if (validatesInput) statuses.push(400);
  if (AUTH_KINDS[auth].schemes.length > 0) statuses.push(401);
  if (named) statuses.push(404);
  return statuses;
}

function objectSchema(schema: Schema): { properties: Record<string, Schema>; required: string[] } {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  return { properties, required };
}

function parametersOf(operation: ApiOperation): Array<Record<string, unknown>> {
  const parameters: Array<Record<string, unknown>> = pathParameters(operation.path).map((name) => ({
    name, in: 'path', required: true, schema: { type: 'string' },
  }));
  if (operation.query) {
    const { properties, required } = objectSchema(operation.query);
    for (const [name, schema] of Object.entries(properties)) {
      parameters.push({ name, in: 'query', required: required.includes(name), schema, ...(typeof schema.description === 'string' ? { description: schema.description } : {}) });
    }
  }
  for (const parameter of operation.parameters ?? []) {
    parameters.push({ name: parameter.name, in: parameter.in, required: false, description: parameter.description, schema: parameter.schema });
  }
  return parameters;
}

function requestBodyOf(operation: ApiOperation): Record<string, unknown> | undefined {
  if (operation.body) {
    const required = operation.bodyRequired ?? objectSchema(operation.body).required.length > 0;
    return { required, content: { 'application/json': { schema: operation.body } } };
  }
  if (operation.rawBody) {
    const { contentType, schema, description } = operation.rawBody;
    return { required: true, description, content: { [contentType]: schema ? { schema } : {} } };
  }
  return undefined;
}

function successResponse(operation: ApiOperation, status: number): Record<string, unknown> {
  const headers = { 'X-Request-Id': REQUEST_ID_HEADER };
  if (status === 204 || status === 304) return { description: status === 304 ? 'Not modified' : 'No content', headers };
  if (operation.responseContent) return { description: 'Success', headers, content: Object.fromEntries(Object.entries(operation.responseContent).map(([type, schema]) => [type, { schema }])) };
  if (operation.contentType) return { description: 'Success', headers, content: { [operation.contentType]: {} } };
  return { description: 'Success', headers, content: { 'application/json': { schema: operation.response ?? { type: 'object' } } } };
}

/** The OpenAPI security requirements of an auth kind: any one of its credentials, or none on a local_trusted instance where the local board suffices. */
export function securityOf(auth: RouteAuthKind, deploymentMode: KeelConfig['deploymentMode']): Array<Record<string, string[]>> {
  const kind = AUTH_KINDS[auth];
  const requirements: Array<Record<string, string[]>> = kind.schemes.map((scheme) => ({ [scheme]: [] }));
  if (requirements.length > 0 && kind.localBoard && deploymentMode === 'local_trusted') requirements.push({});
  return requirements;
}

export function toOperationObject(operation: ApiOperation, deploymentMode: KeelConfig['deploymentMode']): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const status of operation.success) responses[String(status)] = successResponse(operation, status);
  for (const status of [...new Set(operation.errors)].sort((a, b) => a - b)) responses[String(status)] = errorResponseRef(status);
  responses.default = { $ref: '#/components/responses/Error' };
  const auth = AUTH_KINDS[operation.auth];
  const description = [`**Auth:** \`${operation.auth}\`: ${auth.description}`, operation.description].filter(Boolean).join('\n\n');
  const parameters = parametersOf(operation);
  const requestBody = requestBodyOf(operation);
  return {
    operationId: operation.operationId,
    summary: operation.summary,
    description,
    tags: operation.tags,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses,
    security: securityOf(operation.auth, deploymentMode),
    'x-keel-auth': operation.auth,
    ...operation.extensions,
  };
}
