import type { Failure } from './driver.ts';

/**
 * The failure a model provider's error names, for tools that relay the provider's own error text
 * (OpenCode's `error` events and logs, Pi's `errorMessage`): an authentication refusal, an
 * exhausted quota or a rate limit, each a failure a user acts on differently. Anything else is
 * not classified here (null): the caller decides what an unrecognised error means.
 */
export function providerFailure(message: string, status?: number | null, headers?: Record<string, unknown> | null): Failure | null {
  const text = message.trim() || 'the model provider refused the request';
  if (status === 401 || status === 403 || AUTH.test(text)) {
    return { errorCode: 'tool_auth_required', message: `The model provider refused the credentials: ${text}` };
  }
  // A quota answer comes as a 429 too: the billing words decide, since waiting will not lift it.
  if (QUOTA.test(text)) return { errorCode: 'tool_quota_exhausted', message: `The model provider's quota is exhausted: ${text}` };
  if (status === 429 || RATE.test(text)) {
    return { errorCode: 'tool_rate_limited', message: `The model provider is rate limiting: ${text}`, retryAt: retryAtOf(headers) };
  }
  return null;
}

const AUTH = /\b(401|403)\b|invalid[ _-]?api[ _-]?key|incorrect api key|unauthori[sz]ed|authentication|not authenticated|no api key|api key (is )?(missing|required|not (found|set))|permission denied by provider/i;
const QUOTA = /insufficient[ _]quota|exceeded your current quota|quota (exceeded|exhausted)|credit balance is too low|billing/i;
const RATE = /\b429\b|rate[ _-]?limit|too many requests|overloaded/i;

/** The moment a rate limit lifts, from the provider's `retry-after` (seconds or an HTTP date), or null. */
function retryAtOf(headers?: Record<string, unknown> | null): string | null {
  if (!headers) return null;
  const entry = Object.entries(headers).find(([name]) => name.toLowerCase() === 'retry-after');
  const value = typeof entry?.[1] === 'string' ? entry[1].trim() : null;
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return new Date(Date.now() + seconds * 1000).toISOString();
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : new Date(date).toISOString();
}

/**
 * The part of a log's tail that the last attempt wrote: when the kernel started the tool once
 * more with a fresh session, what the refused resume printed before says nothing of the end.
 */
export function lastAttempt(tail: string): string {
  const marker = tail.lastIndexOf('starting it once more with a fresh session');
  return marker < 0 ? tail : tail.slice(marker);
}


export const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

export const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
export const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0);
