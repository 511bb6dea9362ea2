import type { WireFormat } from './meter.ts';
import { numberOr } from './meter.ts';

/**
 * Anthropic Messages: `message_start` carries the input figures (input_tokens is already the
 * uncached part; cache reads and writes apart), `message_delta` the final output count; a
 * non-streamed answer has them all in `usage`.
 */
export const anthropicFormat: WireFormat = {
  event(state, event, data) {
    if (!data) return;
    const type = data.type ?? event.event;
    if (type === 'message_start') {
      const message = data.message as Record<string, unknown> | undefined;
      if (typeof message?.model === 'string') state.model = message.model;
      readUsage(state, message?.usage, false);
    } else if (type === 'content_block_delta') {
      const delta = data.delta as Record<string, unknown> | undefined;
      state.delta(delta?.text ?? delta?.partial_json ?? delta?.thinking);
    } else if (type === 'message_delta') {
      readUsage(state, data.usage, true);
    }
  },
  body(state, body) {
    if (typeof body.model === 'string') state.model = body.model;
    readUsage(state, body.usage, true);
  },
  cutFrame(message) {
    return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'permission_error', message } })}\n\n`;
  },
};

function readUsage(state: Parameters<WireFormat['body']>[0], value: unknown, final: boolean): void {
  if (!value || typeof value !== 'object') return;
  const usage = value as Record<string, unknown>;
  state.input = numberOr(usage.input_tokens, state.input);
  state.cachedInput = numberOr(usage.cache_read_input_tokens, state.cachedInput);
  state.cacheWrite = numberOr(usage.cache_creation_input_tokens, state.cacheWrite);
  // message_start's output_tokens is a placeholder (1): only the final figure counts.
  if (final) {
    state.output = numberOr(usage.output_tokens, state.output);
    state.final = true;
  }
}
