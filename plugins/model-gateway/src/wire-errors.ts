import { respond } from '@keel/sdk/plugin';
import type { Kind } from './context.ts';

/**
 * The gateway's refusals, in the error shape of the protocol the client speaks (the path's
 * kind), so that a provider SDK or a coding tool reads them as it reads its provider's own:
 * never forwarded, never a Keel error body. `code` is Keel's reason, where the shape has room.
 */
export type Refusal = 'unauthenticated' | 'forbidden' | 'not_found' | 'rate_limited' | 'invalid_request';

const STATUS: Record<Refusal, number> = { unauthenticated: 401, forbidden: 403, not_found: 404, rate_limited: 429, invalid_request: 400 };
/** The error types of Anthropic's API, which OpenAI clients read as well (`error.type`). */
const ERROR_TYPE: Record<Refusal, string> = {
  unauthenticated: 'authentication_error', forbidden: 'permission_error', not_found: 'not_found_error', rate_limited: 'rate_limit_error', invalid_request: 'invalid_request_error',
};
const GEMINI_STATUS: Record<Refusal, string> = {
  unauthenticated: 'UNAUTHENTICATED', forbidden: 'PERMISSION_DENIED', not_found: 'NOT_FOUND', rate_limited: 'RESOURCE_EXHAUSTED', invalid_request: 'INVALID_ARGUMENT',
};

export function wireBody(kind: Kind, refusal: Refusal, code: string, message: string): unknown {
  const status = STATUS[refusal];
  if (kind === 'anthropic') return { type: 'error', error: { type: ERROR_TYPE[refusal], message } };
  if (kind === 'openai') return { error: { message, type: ERROR_TYPE[refusal], param: null, code } };
  return { error: { code: status, message, status: GEMINI_STATUS[refusal] } };
}

/** A refusal as a route answer; `retryAfterSeconds` adds `retry-after` (rate limits). */
export function refuse(kind: Kind, refusal: Refusal, code: string, message: string, retryAfterSeconds?: number) {
  const headers: Record<string, string> = { 'x-keel-refusal': code };
  if (retryAfterSeconds !== undefined) headers['retry-after'] = String(retryAfterSeconds);
  return respond(STATUS[refusal], wireBody(kind, refusal, code, message), headers);
}

/** Thrown inside the decision and turned into the answer by its caller. */
export class GatewayRefusal extends Error {
  readonly refusal: Refusal;
  readonly code: string;
  readonly retryAfterSeconds?: number;
  constructor(refusal: Refusal, code: string, message: string, retryAfterSeconds?: number) {
    super(message);
    this.refusal = refusal;
    this.code = code;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
