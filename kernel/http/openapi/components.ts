import { errorBodySchema, validationIssueSchema } from '../error-schema.ts';
import { SESSION_COOKIE } from '../../auth/resolve-actor.ts';
import type { SecurityScheme } from '../route-auth.ts';

/**
 * What every operation of the document refers to: the error body, the shared error answers
 * (one per status, each the same body), the request-id header and the credentials.
 */
export const ERROR_RESPONSES: Record<number, { name: string; description: string }> = {
  400: { name: 'BadRequest', description: 'The request is malformed or fails validation (`bad_request`, `validation_failed` with `issues`).' },
  401: { name: 'Unauthorized', description: 'No valid credentials for this route.' },
  403: { name: 'Forbidden', description: 'The caller may not do this: wrong kind of actor, another company, or a missing permission.' },
  404: { name: 'NotFound', description: 'Nothing named by the path (or, for routes that say so, the feature is off).' },
  408: { name: 'RequestTimeout', description: 'An upload did not finish within its deadline; nothing was stored.' },
  409: { name: 'Conflict', description: 'The request conflicts with the current state.' },
  413: { name: 'PayloadTooLarge', description: 'The body exceeds its limit.' },
  415: { name: 'UnsupportedMediaType', description: 'The body is not of the content type the route reads.' },
  422: { name: 'UnprocessableEntity', description: 'The body is well formed but names something unusable.' },
  429: { name: 'TooManyRequests', description: 'A bound was reached (held streams of a plugin in a company, for example); retry later.' },
  502: { name: 'BadGateway', description: 'A plugin answered with something the host refuses.' },
  503: { name: 'ServiceUnavailable', description: 'The database, a plugin or the instance itself is not available yet; retry shortly.' },
  504: { name: 'GatewayTimeout', description: 'A plugin did not answer within its deadline.' },
};

export const REQUEST_ID_HEADER = { $ref: '#/components/headers/RequestId' };

const SECURITY_SCHEMES: Record<SecurityScheme, Record<string, unknown>> = {
  boardApiKey: { type: 'http', scheme: 'bearer', description: 'A board API key (`svc_board_…`), from the command-line auth challenge.' },
  session: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'A browser session (authenticated mode), from POST /api/auth/sign-in.' },
  agentApiKey: { type: 'http', scheme: 'bearer', description: 'An agent API key, from POST /api/agents/{agentId}/keys.' },
  agentJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A run-scoped agent JWT, handed to an agent for one run.' },
  challengeSecret: { type: 'apiKey', in: 'header', name: 'X-Challenge-Secret', description: 'The secret of a command-line auth challenge, as its creation answered it.' },
};

export function components(): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const { name, description } of Object.values(ERROR_RESPONSES)) {
    responses[name] = {
      description,
      headers: { 'X-Request-Id': REQUEST_ID_HEADER },
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }
  responses.Error = {
    description: 'Any other error, with the same body (500 `internal_error` never carries internals).',
    headers: { 'X-Request-Id': REQUEST_ID_HEADER },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
  return {
    schemas: { Error: errorBodySchema, ValidationIssue: validationIssueSchema },
    responses,
    headers: {
      RequestId: {
        description: 'The id of the request: a short, plain X-Request-Id the client sent, or a new uuid. Error bodies repeat it as `requestId`.',
        schema: { type: 'string' },
      },
    },
    securitySchemes: SECURITY_SCHEMES,
  };
}

/** `#/components/responses/...` of an error status. */
export function errorResponseRef(status: number): { $ref: string } {
  const known = ERROR_RESPONSES[status];
  if (!known) throw new Error(`No shared error response for status ${status}`);
  return { $ref: `#/components/responses/${known.name}` };
}
