import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { errorBody, KeelError } from '../http/errors.ts';

/** A tool's answer as MCP content: the JSON the HTTP route answers, as text. */
export function toolResult(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }] };
}

/**
 * A tool that failed answers an MCP tool error (`isError`), carrying the API's JSON error body
 * with its status, so a model sees why and can correct itself; the request itself succeeded.
 * Anything but a KeelError is an internal failure and is not described.
 */
export function toolError(error: unknown): CallToolResult {
  const body = error instanceof KeelError && error.expose
    ? { status: error.status, ...errorBody(error) }
    : { status: 500, error: 'Internal server error', code: 'internal_error' };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/** An HTTP answer of the kernel's own request path as a tool result: 2xx is the result, anything else a tool error. */
export function answerResult(answer: { status: number; contentType: string; text: string }): CallToolResult {
  const text = answer.text === '' ? 'null' : answer.text;
  if (answer.status >= 200 && answer.status < 300) return { content: [{ type: 'text', text }] };
  let body: Record<string, unknown>;
  try {
    body = { status: answer.status, ...(JSON.parse(text) as Record<string, unknown>) };
  } catch {
    body = { status: answer.status, error: text.slice(0, 2000) };
  }
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}
