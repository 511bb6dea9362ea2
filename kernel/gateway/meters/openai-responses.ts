import type { MeterState, WireFormat } from './meter.ts';
import { numberOr } from './meter.ts';

/**
 * OpenAI Responses: the usage arrives with `response.completed` (or `response.incomplete` /
 * `response.failed`); input_tokens includes the cached part (input_tokens_details.cached_tokens).
 * Every `*.delta` event with a string delta counts towards the output estimate meanwhile.
 */
export const openaiResponsesFormat: WireFormat = {
  event(state, event, data) {
    if (!data) return;
    const type = typeof data.type === 'string' ? data.type : event.event ?? '';
    if (type.endsWith('.delta')) return state.delta(data.delta);
    const response = data.response as Record<string, unknown> | undefined;
    if (typeof response?.model === 'string') state.model = response.model;
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') readUsage(state, response?.usage);
  },
  body(state, body) {
    if (typeof body.model === 'string') state.model = body.model;
    readUsage(state, body.usage);
  },
  cutFrame(message) {
    return `event: error\ndata: ${JSON.stringify({ type: 'error', code: 'budget_exceeded', message })}\n\n`;
  },
};

function readUsage(state: MeterState, value: unknown): void {
  if (!value || typeof value !== 'object') return;
  const usage = value as Record<string, unknown>;
  const input = numberOr(usage.input_tokens, null);
  const cached = numberOr((usage.input_tokens_details as Record<string, unknown> | undefined)?.cached_tokens, 0) ?? 0;
  if (input !== null) {
    state.input = Math.max(0, input - cached);
    state.cachedInput = Math.min(cached, input);
  }
  state.output = numberOr(usage.output_tokens, state.output);
  state.final = true;
}
