import type { MeterState, WireFormat } from './meter.ts';
import { numberOr } from './meter.ts';

/**
 * OpenAI Chat Completions: `usage` (prompt_tokens includes the cached part,
 * prompt_tokens_details.cached_tokens; completion_tokens) on the answer, or on the last chunk of
 * a stream that asked for it (stream_options.include_usage). Content, reasoning and tool-call
 * argument deltas count towards the output estimate meanwhile.
 */
export const openaiChatFormat: WireFormat = {
  event(state, _event, data) {
    if (!data) return;
    if (typeof data.model === 'string') state.model = data.model;
    for (const choice of Array.isArray(data.choices) ? data.choices as Array<Record<string, unknown>> : []) {
      const delta = choice.delta as Record<string, unknown> | undefined;
      if (!delta) continue;
      state.delta(delta.content);
      state.delta(delta.reasoning_content ?? delta.reasoning);
      for (const call of Array.isArray(delta.tool_calls) ? delta.tool_calls as Array<Record<string, unknown>> : []) {
        state.delta((call.function as Record<string, unknown> | undefined)?.arguments);
      }
    }
    readUsage(state, data.usage);
  },
  body(state, body) {
    if (typeof body.model === 'string') state.model = body.model;
    readUsage(state, body.usage);
  },
  cutFrame(message) {
    return `data: ${JSON.stringify({ error: { message, type: 'permission_error', code: 'budget_exceeded' } })}\n\n`;
  },
};

function readUsage(state: MeterState, value: unknown): void {
  if (!value || typeof value !== 'object') return;
  const usage = value as Record<string, unknown>;
  const prompt = numberOr(usage.prompt_tokens, null);
  const cached = numberOr((usage.prompt_tokens_details as Record<string, unknown> | undefined)?.cached_tokens, 0) ?? 0;
  if (prompt !== null) {
    state.input = Math.max(0, prompt - cached);
    state.cachedInput = Math.min(cached, prompt);
  }
  state.output = numberOr(usage.completion_tokens, state.output);
  state.final = true;
}
