import type { Schema } from './validate.ts';

/**
 * The JSON schema of the one error body every route answers with: `errorBody` (errors.ts)
 * writes `error`, `code`, `details` and `issues`, and the request log adds `requestId`, the
 * id also sent as `X-Request-Id`. The OpenAPI document publishes this schema, and the
 * OpenAPI test checks real error answers against it.
 */
export const validationIssueSchema: Schema = {
  type: 'object',
  required: ['path', 'message'],
  properties: {
    path: { type: 'string', description: 'Dotted path of the offending value; `(body)` for the body as a whole.' },
    message: { type: 'string' },
    keyword: { type: 'string', description: 'The JSON schema keyword that failed.' },
  },
};

export const errorBodySchema: Schema = {
  type: 'object',
  required: ['error', 'code', 'requestId'],
  properties: {
    error: { type: 'string', description: 'What went wrong, for people.' },
    code: { type: 'string', minLength: 1, description: "Stable machine-readable code: the kernel's are listed in the error catalog (docs/errors.md); a plugin route may answer codes of its own." },
    details: { description: 'Structured detail of some errors (the fields or plugins involved, for example).' },
    issues: { type: 'array', items: { $ref: '#/components/schemas/ValidationIssue' }, description: 'Each failed check of a `validation_failed` answer.' },
    requestId: { type: 'string', description: 'The id of the request, the same as the `X-Request-Id` response header and the server log line.' },
  },
  // A few errors carry more (GET /api/health's 503 adds the components' states).
  additionalProperties: true,
};
